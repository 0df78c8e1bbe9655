// Package jobs is jetbpm's external job queue: the policy a job carries
// (RetryPolicy, ErrorMapper, output mapping, trust), the job's engine-side
// state, the messages workers exchange with the engine, and Decide, the
// pure function that fences a worker's message against that state and
// turns it into a verdict, an action on the job message and, when the job
// is done, the terminal outcome the instance applies.
//
// Nothing here does I/O: the engine's partition loop feeds Decide and
// carries out its Decision on JetStream (see docs/jobs.md). Policies are
// data (rules with expr-lang predicates, retry parameters, output paths) so
// a worker in any language can run them under WorkerTrusted.
package jobs
