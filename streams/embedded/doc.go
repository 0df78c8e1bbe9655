// Package embedded runs nats-server with JetStream inside the process, for a
// laptop, a test or a benchmark:
//
//	srv, err := embedded.Start(embedded.Config{StoreDir: "./data/nats"})
//	nc, err := srv.Connect() // in-process, no socket
//	defer srv.Shutdown()
//
// It is apart from package streams so that programs which only connect to a
// server, such as workers built on workerkit, do not link nats-server.
package embedded
