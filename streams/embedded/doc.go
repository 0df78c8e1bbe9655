// Package embedded runs nats-server with JetStream inside the process, for a
// laptop, a test or a benchmark:
//
//	srv, err := embedded.Start(embedded.Config{StoreDir: "./data/nats"})
//	nc, err := srv.Connect() // in-process, no socket
//	defer srv.Shutdown()
//
// The server syncs its store every two minutes unless told otherwise; a
// power cut loses what it acknowledged since. Config.SyncAlways syncs every
// message before its acknowledgement (an fsync each). Server.Sync is the
// cheap alternative for a program that answers its own callers: after the
// writes an answer depends on, one Sync makes them durable, and callers
// waiting together share one round of fsyncs.
//
// It is apart from package streams so that programs which only connect to a
// server, such as workers built on workerkit, do not link nats-server.
package embedded
