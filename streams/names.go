package streams

import (
	"fmt"
	"hash/fnv"
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
)

// KV buckets.
const (
	// InstancesBucket holds one checkpoint per instance, keyed by instance id.
	// A finished instance keeps its final record until its retention TTL ends.
	InstancesBucket = "jetbpm-instances"
	// DefinitionsBucket holds deployed process definitions (DefinitionKey) and
	// the latest version per process (LatestKey).
	DefinitionsBucket = "jetbpm-definitions"
	// MetaBucket holds cluster-wide settings fixed at provisioning (MetaPartitionsKey).
	MetaBucket = "jetbpm-meta"
	// IncidentsBucket holds incident records (IncidentKey) and the variable
	// snapshots taken at each raise (SnapshotKey).
	IncidentsBucket = "jetbpm-incidents"
)

// MetaPartitionsKey stores the partition count; every engine node reads it.
const MetaPartitionsKey = "partitions"

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

// Fact kinds are the last token of a fact subject.
const (
	FactInstance = "instance"
	FactIncident = "incident"
)

// FactSubject is where a fact about a process's instances or incidents is
// published: jetbpm.fact.<instance|incident>.<process>.<kind>, so an
// integration subscribes by process, by kind, or both.
func FactSubject(family, processID, kind string) string {
	return fmt.Sprintf("%s.%s.%s.%s", factsRoot, family, Token(processID), Token(kind))
}

// APISubject is the request subject of an engine API operation.
func APISubject(op string) string { return apiRoot + "." + op }

// DefinitionKey is the KV key of one deployed version of a process.
func DefinitionKey(processID string, version int) string {
	return fmt.Sprintf("def.%s.%d", Token(processID), version)
}

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

// SnapshotKey is the KV key of the variables snapshot of an incident's
// attempt-th raise.
func SnapshotKey(id string, attempt int) string { return fmt.Sprintf("snap.%s.%d", Token(id), attempt) }
