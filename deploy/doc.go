// Package deploy holds what a team deploys jetbpm with — a container
// image build (Dockerfile), a compose file for a 3-node NATS cluster with
// two engine nodes and a worker (compose.yaml), a Helm chart
// (helm/jetbpm) — and the tests that check them (docs/engine.md §6.1,
// "Deploy it").
package deploy
