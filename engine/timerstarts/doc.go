// Package timerstarts runs timer start events (docs/timerstart.md) on
// JetStream message schedules.
//
// There is one @at schedule per process, on streams.TimerStartSchedule, for the
// next fire of its latest version's timer start event. A fire lands on
// streams.TimerStartFireSubject; the shared consumer
// streams.TimerStartsConsumer takes it on any engine node, which starts
// the fire's instance (its id derives from process, version and due time,
// so a redelivered fire starts nothing twice) and schedules the next.
package timerstarts
