// Package camunda7 serves the part of Camunda 7's REST API that external
// task workers and deploy tools use, so programs written for Camunda 7 —
// the camunda-external-task-client-js client, Camunda Modeler's deploy
// button — run against jetbpm unmodified. docs/camunda7-migration.md
// lists the endpoints and where they differ.
//
// Mount the Handler under Prefix beside jetbpm's own HTTP API:
//
//	c7, err := camunda7.New(eng, nc, camunda7.Options{})
//	mux.Handle(camunda7.Prefix+"/", http.StripPrefix(camunda7.Prefix, c7))
//
// External tasks are jetbpm jobs, with no second lock or retry mechanism:
// fetchAndLock pulls from the topic's JetStream consumer, so a REST worker
// holds a delivery exactly as a NATS worker does (docs/worker-protocol.md),
// and the facade speaks the worker protocol for it: it checks a
// redelivery in before handing it out, and turns complete, failure,
// bpmnError, extendLock and unlock into reports on the job's reportTo,
// waiting for the engine's verdict. An external task's id is its
// delivery, so a report from a worker whose lock has moved on is refused
// by the engine's fencing (400) and changes nothing; a finished job is 404.
//
// Variables are Camunda typed values both ways (variables.go): String,
// Boolean, Integer, Long, Short, Double, Date, Json, Null, and Object in
// application/json; type names in any case.
package camunda7
