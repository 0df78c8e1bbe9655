// Package streams is everything jetbpm knows about NATS: client connections,
// the JetStream layout and the wire codec. The embedded nats-server lives in
// package streams/embedded, so a program that only connects (a worker) does
// not link the server. The rest of jetbpm talks to NATS only through what
// this package names and provisions.
//
// # Layout
//
// Six streams and five KV buckets hold all of jetbpm's state (names.go
// names each of them and every subject):
//
//   - EventsStream (work queue) carries what the engine addresses to an
//     instance: start requests, fired timers and operator commands, and the
//     timer schedules that fire into it. Instances are spread over a fixed
//     number of partitions (PartitionOf); each partition has one durable pull
//     consumer whose pinned priority group routes it to one engine node at a
//     time.
//   - ReportsStream (work queue) carries what workers send the engine, per
//     partition like events. It is apart from EventsStream, without rollups
//     or schedules, so a worker's headers cannot purge or forge events. A
//     report's subject names the job's topic (ReportSubject), so a worker's
//     credentials can be confined to its topics' reports (TopicReports).
//   - JobsStream (work queue) is the external job queue: one subject per job,
//     one durable pull consumer per topic whose AckWait is the topic's lock
//     duration (EnsureTopic).
//   - FactsStream (limits, MaxAge) keeps lifecycle, incident and message
//     facts for integrations to subscribe to and replay.
//   - MessagesStream and MessageCommandsStream (work queues) feed the
//     message partitions, where BPMN messages meet the subscriptions that
//     wait for them: messages from anyone on jetbpm.m.pub.<name>.<key>, the
//     engine's own commands (subscriptions, rejections, expiries) in the
//     other. A subject transform on each stores a message in the partition
//     the server computes from its name and key, so a plain publish and an
//     engine command about the same pair meet without anyone outside the
//     server hashing. The messages stream refuses rollups, schedules and
//     TTLs, like the reports stream.
//   - InstancesBucket, DefinitionsBucket, IncidentsBucket, MessagesBucket
//     and MetaBucket hold checkpoints, deployed definitions, incident
//     records with their variable snapshots, the message partitions'
//     entries, and the settings fixed at first provisioning.
//     The definitions bucket takes atomic batches (PublishAtomic), so a
//     deploy of several processes is stored all or none.
//
// Provision creates all of it idempotently; running it on every start is the
// intended use. A setting that changed is applied in place and no message is
// ever deleted. The partition count is the exception: it is fixed by whoever
// provisions first, because PartitionOf must keep mapping an instance to the
// same partition forever.
//
// # Servers
//
// embedded.Start runs nats-server in-process for a laptop or a test; Connect
// reaches an existing server or cluster. Either way, CheckServer verifies the
// server is new enough (MinServerVersion) for message schedules, per-message
// TTLs and pinned consumers before jetbpm relies on them.
//
// # Codec
//
// Marshal and Unmarshal encode messages and checkpoints as msgpack behind an
// envelope (0xC1, CodecVersion, a CRC-32C of the body) so a future format can
// be told apart from this one, and a record damaged in the store is refused
// (ErrDamaged) rather than decoded into something else. Values decoded into any are JSON-like (nil, bool, string,
// int64, float64, []any, map[string]any, and time.Time in UTC), whichever
// language encoded them.
package streams
