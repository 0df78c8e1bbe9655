package streams

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
)

// Every subject, stream, consumer and bucket jetbpm uses is named in this file.
// Subjects are built from tokens; user-provided names (process ids, topics) pass
// through Token first so a dot or wildcard in a name cannot change the routing.

// Streams.
const (
	// EventsStream holds what the engine itself addresses to an instance:
	// start requests, fired timers and operator commands (work-queue
	// retention), plus the pending timer schedules that fire into it.
	EventsStream = "JETBPM_EVENTS"
	// ReportsStream holds what workers send the engine. It is its own
	// stream, without rollups or schedules, so a worker's headers cannot
	// purge or inject events (workers may publish here and nowhere else).
	ReportsStream = "JETBPM_REPORTS"
	// JobsStream is the external job queue: one subject per job, one durable
	// pull consumer per topic (work-queue retention).
	JobsStream = "JETBPM_JOBS"
	// FactsStream keeps lifecycle and incident facts for replay (limits retention).
	FactsStream = "JETBPM_FACTS"
	// MessagesStream takes the BPMN messages published to the message
	// partitions (MessageSubject with MessagePublish), from integrations
	// and from the engine alike (work-queue retention). It refuses rollups,
	// schedules, per-message TTLs and purges, so a publisher's headers
	// cannot purge or forge anything.
	MessagesStream = "JETBPM_MESSAGES"
	// MessageCommandsStream takes what only the engine tells a message
	// partition: subscriptions opening and closing, rejected correlations,
	// ends of message-started instances, and the expiries of buffered
	// messages with their pending schedules (work-queue retention).
	MessageCommandsStream = "JETBPM_MESSAGE_COMMANDS"
)

// KV buckets.
const (
	// InstancesBucket holds one checkpoint per instance, keyed by instance id.
	// A finished instance keeps its final record until its retention TTL ends.
	InstancesBucket = "jetbpm-instances"
	// DefinitionsBucket holds deployed process definitions (DefinitionKey),
	// the BPMN documents they were imported from (SourceKey) and the latest
	// version per process (LatestKey, LatestKeys).
	DefinitionsBucket = "jetbpm-definitions"
	// MetaBucket holds cluster-wide settings fixed at provisioning (MetaPartitionsKey).
	MetaBucket = "jetbpm-meta"
	// IncidentsBucket holds incident records (IncidentKey) and the variable
	// snapshots taken at each raise (SnapshotKey).
	IncidentsBucket = "jetbpm-incidents"
	// MessagesBucket holds one entry per message name and correlation key
	// (MessageEntryKey): its subscriptions and buffered messages, written
	// only by the message partition the pair belongs to.
	MessagesBucket = "jetbpm-messages"
	// TasksBucket holds one record per user task (TaskKey): the projection
	// of the task its instance's checkpoint carries, written after the
	// checkpoint and queried without loading instances
	// (docs/usertasks.md §2). A finished task's record expires after the
	// finished-instance retention.
	TasksBucket = "jetbpm-tasks"
	// LostBucket holds the records of detected damage to the store
	// (LostKey): instances lost or damaged, streams that went back
	// (docs/reliability.md, "A damaged store"). They stay until an
	// operator acts on them.
	LostBucket = "jetbpm-lost"
	// OwnersBucket holds the engine nodes' heartbeats (OwnerNodeKey) and
	// the partitions' leases (OwnerPartitionKey); a key not rewritten for
	// the bucket's TTL, the failover, expires (docs/engine.md §6.1).
	OwnersBucket = "jetbpm-owners"
)

// OwnerNodeKey keys engine node id's heartbeat in OwnersBucket;
// OwnerNodePrefix starts every such key.
func OwnerNodeKey(id string) string { return OwnerNodePrefix + id }

// OwnerPartitionKey keys partition p's lease in OwnersBucket;
// OwnerPartitionPrefix starts every such key.
func OwnerPartitionKey(p int) string { return OwnerPartitionPrefix + strconv.Itoa(p) }

// Key prefixes of OwnersBucket.
const (
	OwnerNodePrefix      = "node."
	OwnerPartitionPrefix = "part."
)

// MetaPartitionsKey stores the partition count; every engine node reads it.
const MetaPartitionsKey = "partitions"

// MetaMarksKey stores the store's high-water marks: the last sequence of
// each stream, taken after the store made it durable (engine/lost.Marks).
const MetaMarksKey = "marks"

// MetaSchemaKey stores the version of this layout (LayoutSchema), so a build
// that expects another layout refuses to run on it instead of misreading it.
const MetaSchemaKey = "schema"

// Subject roots. Each stream owns exactly one root (two for events).
const (
	eventsRoot  = "jetbpm.evt"
	reportsRoot = "jetbpm.rpt"
	timersRoot  = "jetbpm.tmr"
	jobsRoot    = "jetbpm.job"
	factsRoot   = "jetbpm.fact"
	apiRoot     = "jetbpm.api"
	// routeRoot is not a stream's: engine nodes ask each other on it.
	routeRoot = "jetbpm.route"
)

// Wildcards a stream or a permission rule captures.
const (
	EventsSubjects  = eventsRoot + ".>"
	ReportsSubjects = reportsRoot + ".>"
	TimersSubjects  = timersRoot + ".>"
	JobsSubjects    = jobsRoot + ".>"
	FactsSubjects   = factsRoot + ".>"
	APISubjects     = apiRoot + ".>"
)

// EngineQueue is the queue group engine nodes serve the API in, so each
// request is answered by exactly one node.
const EngineQueue = "jetbpm-engine"

// PriorityGroup is the pull-consumer priority group engine nodes fetch
// partition events in; the server pins each partition to one node at a time.
const PriorityGroup = "engine"

// RouteStartSubject is where engine node node takes the starts other nodes
// route to it, for a partition it holds (engine/route.go): a request, no
// stream stores it.
func RouteStartSubject(node string) string {
	return routeRoot + ".start." + Token(node)
}

// EventSubject is where events for an instance are published.
func EventSubject(partition int, instanceID string) string {
	return fmt.Sprintf("%s.%d.%s", eventsRoot, partition, Token(instanceID))
}

// ReportSubject is where workers publish the reports about a job of topic
// in an instance: jetbpm.rpt.<partition>.<token(topic)>.<token(instance)>.
// It is a separate root so the worker role can be allowed this and nothing
// else, and it names the topic so a worker can be allowed the reports of its
// topics only (TopicReports).
func ReportSubject(partition int, topic, instanceID string) string {
	return fmt.Sprintf("%s.%d.%s.%s", reportsRoot, partition, Token(topic), Token(instanceID))
}

// TopicReports matches the report subjects of topic's jobs on every
// partition: the publish permission of a worker confined to topic.
func TopicReports(topic string) string { return fmt.Sprintf("%s.*.%s.>", reportsRoot, Token(topic)) }

// TimerSubject holds the schedule of one timer. One schedule lives per subject,
// so republishing reschedules and purging the subject cancels.
func TimerSubject(partition int, instanceID, timerID string) string {
	return fmt.Sprintf("%s.%d.%s.%s", timersRoot, partition, Token(instanceID), Token(timerID))
}

// PartitionFilter is the subject filter of a partition's events consumer.
func PartitionFilter(partition int) string { return fmt.Sprintf("%s.%d.>", eventsRoot, partition) }

// PartitionConsumer names the durable events consumer of one partition.
func PartitionConsumer(partition int) string { return fmt.Sprintf("partition-%d", partition) }

// ReportsFilter is the subject filter of a partition's reports consumer.
func ReportsFilter(partition int) string { return fmt.Sprintf("%s.%d.>", reportsRoot, partition) }

// ReportsConsumer names the durable reports consumer of one partition.
func ReportsConsumer(partition int) string { return fmt.Sprintf("reports-%d", partition) }

// PartitionOf maps an instance to its partition. It must never change for a
// given partition count: the count is fixed at provisioning (MetaPartitionsKey).
func PartitionOf(instanceID string, partitions int) int {
	h := fnv.New32a()
	h.Write([]byte(instanceID))
	return int(h.Sum32() % uint32(partitions))
}

// JobSubject carries one job. A subject per job lets the engine publish a job
// at most once (expected last subject sequence 0) however often it retries.
func JobSubject(topic, jobID string) string {
	return fmt.Sprintf("%s.%s.%s", jobsRoot, Token(topic), Token(jobID))
}

// TopicFilter is the subject filter of a topic's consumer.
func TopicFilter(topic string) string { return fmt.Sprintf("%s.%s.>", jobsRoot, Token(topic)) }

// TopicConsumer names the durable pull consumer of a topic.
func TopicConsumer(topic string) string { return "topic-" + Token(topic) }

// Fact families are the third token of a fact subject.
const (
	FactInstance = "instance"
	FactIncident = "incident"
	// FactMessage facts are about a message name (FactSubject's second
	// argument is the message name).
	FactMessage = "message"
	// FactTask facts are about user tasks: created, assigned, completed,
	// canceled (jetbpm.fact.task.<process>.<kind>).
	FactTask = "task"
)

// FactSubject is where a fact about a process's instances, incidents or
// user tasks is published:
// jetbpm.fact.<instance|incident|task>.<process>.<kind>, so an
// integration subscribes by process, by kind, or both. Message facts name
// the message instead of a process: jetbpm.fact.message.<name>.<kind>.
func FactSubject(family, processID, kind string) string {
	return fmt.Sprintf("%s.%s.%s.%s", factsRoot, family, Token(processID), Token(kind))
}

// APISubject is the request subject of an engine API operation.
func APISubject(op string) string { return apiRoot + "." + op }

// DefinitionKey is the KV key of one deployed version of a process.
func DefinitionKey(processID string, version int) string {
	return fmt.Sprintf("def.%s.%d", Token(processID), version)
}

// DefinitionKeys is the KV filter of every deployed version of a process.
func DefinitionKeys(processID string) string { return "def." + Token(processID) + ".*" }

// SourceKey is the KV key of the BPMN document a deployed version of a
// process was imported from (gzip-compressed, in a msgpack record).
func SourceKey(processID string, version int) string {
	return fmt.Sprintf("src.%s.%d", Token(processID), version)
}

// LatestKeys is the KV filter of every process's LatestKey.
const LatestKeys = "latest.*"

// LatestKey is the KV key holding the latest deployed version of a process.
func LatestKey(processID string) string { return "latest." + Token(processID) }

// Token makes s safe as one subject token and KV key part. Letters, digits,
// '-' and '_' pass unchanged; every other byte becomes '=' plus two hex
// digits ('=' is legal in both subjects and KV keys), so distinct names stay
// distinct and a token never holds '.', '*', '>' or whitespace.
func Token(s string) string {
	if s == "" {
		return "="
	}
	safe := true
	for i := 0; i < len(s); i++ {
		if !tokenByte(s[i]) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if tokenByte(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "=%02X", c)
	}
	return b.String()
}

func tokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// ReportPrefix is the subject prefix of reports for a partition's
// instances; <token(topic)>.<instance id> follows it (ReportSubject).
func ReportPrefix(partition int) string { return fmt.Sprintf("%s.%d.", reportsRoot, partition) }

// JobTopicToken returns the topic token of a job subject (JobSubject), so
// it compares with a report subject's; "" if subject is not a job subject.
func JobTopicToken(subject string) string {
	rest, ok := strings.CutPrefix(subject, jobsRoot+".")
	if !ok {
		return ""
	}
	topic, _, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	return topic
}

// FactFilter matches every fact of one family about one process.
func FactFilter(family, processID string) string {
	return fmt.Sprintf("%s.%s.%s.*", factsRoot, family, Token(processID))
}

// IncidentKey is the KV key of an incident's record.
func IncidentKey(id string) string { return "inc." + Token(id) }

// IncidentKeys matches every incident record.
const IncidentKeys = "inc.*"

// TaskKey is the KV key of a user task's record in TasksBucket. A task id
// is "<instance>.t<activation>" and an instance id is a token already, so
// the key is the id itself; anything else passes through Token, so a
// made-up id cannot name another key or a wildcard.
func TaskKey(id string) string {
	instance, activation, ok := strings.Cut(id, ".")
	if !ok {
		return Token(id)
	}
	return Token(instance) + "." + Token(activation)
}

// SnapshotKey is the KV key of the variables snapshot of an incident's
// attempt-th raise.
func SnapshotKey(id string, attempt int) string { return fmt.Sprintf("snap.%s.%d", Token(id), attempt) }

// Message partitions (docs/messages.md §3). A message and the subscriptions
// that wait for it meet in one message partition, chosen by the server from
// the name and key tokens of the subject: both message streams rewrite
// jetbpm.m.<kind>.<name>.<key> as it is stored, with a subject transform
// whose partition function hashes the name and key tokens (fnv-32a of the
// two tokens concatenated, modulo the partition count). So a publish from
// any NATS client lands in the partition the engine's own commands for the
// same name and key land in, and nobody outside the server computes a hash.
const (
	messagesRoot = "jetbpm.m"
	// Stored subjects: a message on jetbpm.mp.<p>.<name>.<key>, a command
	// on jetbpm.mc.<p>.<kind>.<name>.<key>; a buffered message's expiry
	// schedule waits on jetbpm.mx.<p>.<name>.<key>.<seq>.
	messagesStored = "jetbpm.mp"
	commandsStored = "jetbpm.mc"
	expiriesRoot   = "jetbpm.mx"
)

// MessageKind is the kind token of a message partition subject.
type MessageKind string

// Message partition subject kinds. Only MessagePublish is for integrations.
const (
	MessagePublish     MessageKind = "pub"   // a message
	MessageSubscribe   MessageKind = "sub"   // a subscription opens
	MessageUnsubscribe MessageKind = "unsub" // a subscription closes
	MessageReject      MessageKind = "rej"   // an instance could not take a message offered to it
	MessageEnd         MessageKind = "end"   // a message-started instance ended
	MessageExpire      MessageKind = "exp"   // a buffered message's time to live ended
)

// messageCommandKinds are the kinds MessageCommandsStream takes.
var messageCommandKinds = []MessageKind{MessageSubscribe, MessageUnsubscribe, MessageReject, MessageEnd, MessageExpire}

// MessagePublishSubjects matches every message publish: the stream's
// subject and the one publish permission an integration needs.
const MessagePublishSubjects = messagesRoot + ".pub.*.*"

// MessageExpirySchedules matches the pending expiry schedules of buffered
// messages (one per buffered message).
const MessageExpirySchedules = expiriesRoot + ".>"

// Message partition headers. A publish may carry MessageTTLHeader (a Go
// duration: how long the message stays buffered for a subscription that
// opens later; absent or 0: not buffered) and MessageReplyHeader (an
// inbox under _INBOX. that receives the partition's answer, JSON). Its
// Nats-Msg-Id is the message id.
const (
	MessageTTLHeader   = "Jetbpm-TTL"
	MessageReplyHeader = "Jetbpm-Reply"
)

// MessageSubject is where a message (kind MessagePublish) or an engine
// command about message name and correlation key is published:
// jetbpm.m.<kind>.<token(name)>.<token(key)>. The empty key is the token
// "=", which no non-empty key becomes.
func MessageSubject(kind MessageKind, name, key string) string {
	return fmt.Sprintf("%s.%s.%s.%s", messagesRoot, kind, Token(name), Token(key))
}

// messageCommandSubjects are MessageCommandsStream's subjects.
func messageCommandSubjects() []string {
	out := make([]string, 0, len(messageCommandKinds)+1)
	for _, k := range messageCommandKinds {
		out = append(out, fmt.Sprintf("%s.%s.*.*", messagesRoot, k))
	}
	return append(out, MessageExpirySchedules)
}

// messagesTransform and commandsTransform are the streams' subject
// transforms: the partition function hashes the name and key tokens.
func messagesTransform(partitions int) (src, dest string) {
	return MessagePublishSubjects,
		fmt.Sprintf("%s.{{partition(%d,1,2)}}.{{wildcard(1)}}.{{wildcard(2)}}", messagesStored, partitions)
}

func commandsTransform(partitions int) (src, dest string) {
	return messagesRoot + ".*.*.*",
		fmt.Sprintf("%s.{{partition(%d,2,3)}}.{{wildcard(1)}}.{{wildcard(2)}}.{{wildcard(3)}}", commandsStored, partitions)
}

// MessagesFilter is the subject filter of message partition p's messages
// consumer; MessageCommandsFilter that of its commands consumer.
func MessagesFilter(p int) string        { return fmt.Sprintf("%s.%d.>", messagesStored, p) }
func MessageCommandsFilter(p int) string { return fmt.Sprintf("%s.%d.>", commandsStored, p) }

// MessagesConsumer and MessageCommandsConsumer name message partition p's
// durable consumers.
func MessagesConsumer(p int) string        { return fmt.Sprintf("messages-%d", p) }
func MessageCommandsConsumer(p int) string { return fmt.Sprintf("message-commands-%d", p) }

// MessageBufferConsumer is a consumer of the expiry schedules that nobody
// pulls: its pending count is the number of buffered messages.
const MessageBufferConsumer = "message-buffer"

// MessageExpirySubject holds the expiry schedule of the buffered message
// seq of an entry, in message partition p. One schedule per subject, so
// publishing it again replaces it.
func MessageExpirySubject(p int, name, key string, seq uint64) string {
	return fmt.Sprintf("%s.%d.%s.%s.%d", expiriesRoot, p, Token(name), Token(key), seq)
}

// MessageEntryKey is the KV key of the entry of a message name and
// correlation key in MessagesBucket.
func MessageEntryKey(name, key string) string { return Token(name) + "." + Token(key) }

// MessageStartKey is the key, in DefinitionsBucket, of the index of the
// processes whose latest version starts on message name.
func MessageStartKey(name string) string { return "msgstart." + Token(name) }

// StoredMessage is a message partition subject as stored, parsed.
type StoredMessage struct {
	Partition int
	Kind      MessageKind
	Name, Key string
}

// ParseStoredMessage parses a subject as stored by a message stream
// (jetbpm.mp.<p>.<name>.<key> or jetbpm.mc.<p>.<kind>.<name>.<key>). Name
// and key must be tokens exactly as Token writes them: an unescaped
// character, or an escape Token would not write, would hash to another
// partition than the name or key it stands for, so it is refused.
func ParseStoredMessage(subject string) (StoredMessage, error) {
	var sm StoredMessage
	toks := strings.Split(subject, ".")
	var names []string
	switch {
	case len(toks) == 5 && toks[0]+"."+toks[1] == messagesStored:
		sm.Kind, names = MessagePublish, toks[3:]
	case len(toks) == 6 && toks[0]+"."+toks[1] == commandsStored && slices.Contains(messageCommandKinds, MessageKind(toks[3])):
		sm.Kind, names = MessageKind(toks[3]), toks[4:]
	default:
		return sm, fmt.Errorf("subject %q is not a message partition subject", subject)
	}
	p, err := strconv.Atoi(toks[2])
	if err != nil || p < 0 || strconv.Itoa(p) != toks[2] {
		return sm, fmt.Errorf("subject %q: partition %q is not a number", subject, toks[2])
	}
	sm.Partition = p
	if sm.Name, err = Untoken(names[0]); err != nil {
		return sm, fmt.Errorf("message name: %w", err)
	}
	if sm.Name == "" {
		return sm, errors.New("message name is empty")
	}
	if sm.Key, err = Untoken(names[1]); err != nil {
		return sm, fmt.Errorf("correlation key: %w", err)
	}
	return sm, nil
}

// Untoken returns the name tok stands for, if tok is exactly what Token
// writes for it.
func Untoken(tok string) (string, error) {
	if tok == "=" {
		return "", nil
	}
	if !strings.Contains(tok, "=") {
		if Token(tok) != tok {
			return "", fmt.Errorf("token %q holds characters that must be escaped (%q)", tok, Token(tok))
		}
		return tok, nil
	}
	b := make([]byte, 0, len(tok))
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if c != '=' {
			b = append(b, c)
			continue
		}
		if i+2 >= len(tok) {
			return "", fmt.Errorf("token %q ends in an incomplete escape", tok)
		}
		v, err := strconv.ParseUint(tok[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("token %q holds a bad escape %q", tok, tok[i:i+3])
		}
		b = append(b, byte(v))
		i += 2
	}
	s := string(b)
	if Token(s) != tok {
		return "", fmt.Errorf("token %q is not escaped as jetbpm escapes %q (%q)", tok, s, Token(s))
	}
	return s, nil
}

// ValidInbox accepts inbox subjects only (_INBOX.<tokens>, at most 256
// bytes, no wildcards). The engine answers on a subject a caller names
// (a worker's verdict, a message partition's answer) with its own
// permissions, so a caller must not be able to aim one at a KV key or an
// API subject.
func ValidInbox(s string) bool {
	if !strings.HasPrefix(s, "_INBOX.") || len(s) > 256 {
		return false
	}
	for _, tok := range strings.Split(s, ".") {
		if tok == "" || tok == "*" || tok == ">" || strings.ContainsAny(tok, " \t\r\n") {
			return false
		}
	}
	return true
}
