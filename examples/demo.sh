#!/bin/sh
# make run: start jetbpm and walk through the whole story in a minute — a
# process with an external worker, a failure that is retried and becomes an
# incident, an operator resolving it from the CLI, a message from the
# warehouse, a person approving a refund, a saga undone by compensation, and
# a Camunda 8 team's Go program working through the Zeebe gateway.
# jetbpm keeps running afterwards; Ctrl-C stops it (JETBPM_DEMO_ONCE=1: it
# stops at the end).
set -eu
cd "$(dirname "$0")/.."
jb=${JETBPM_BIN:-bin/jetbpm}
data=${JETBPM_DATA:-./jetbpm-data}
listen=${JETBPM_LISTEN:-127.0.0.1:4222}
http=${JETBPM_HTTP:-127.0.0.1:9464}
grpc=${JETBPM_GRPC:-127.0.0.1:26500}

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ jetbpm %s\n' "$*"; "$jb" "$@"; }

# status ID prints the instance's status.
status() { "$jb" instance show "$1" --json | sed -n 's/^ *"status": *"\([a-z]*\)".*/\1/p' | head -n 1; }

# await ID STATUS waits (up to 30 s) until the instance has that status.
await() {
	i=0
	while [ "$(status "$1")" != "$2" ]; do
		i=$((i + 1))
		if [ $i -gt 150 ]; then echo "instance $1 did not reach $2" >&2; exit 1; fi
		sleep 0.2
	done
}

env -u JETBPM_NATS_URL "$jb" serve --data "$data" --listen "$listen" --http "$http" --grpc "$grpc" --log-level warn &
serve=$!
export JETBPM_NATS_URL="nats://$listen" # for the client commands and the worker
work=
undo=
trap 'kill $work $undo $serve 2>/dev/null || true; wait 2>/dev/null || true' EXIT INT TERM
i=0
until "$jb" instances list >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 150 ]; then echo "jetbpm serve did not come up" >&2; exit 1; fi
	sleep 0.2
done

say "1. Deploy three processes (an order calculation, a payment charged by a worker, a refund)"
run deploy examples/order.bpmn examples/payment.bpmn examples/refund.bpmn

say "2. Run a worker for topic 'charge': any command can be one (examples/charge.sh)"
printf '$ jetbpm work --topic charge -- examples/charge.sh &\n'
"$jb" work --topic charge --log-level warn -- examples/charge.sh &
work=$!

say "3. A small payment completes"
small=$("$jb" start payment --vars '{"amount": 40}')
echo "started $small"
await "$small" completed
run instance show "$small"

say "4. A large one is declined: retried once (maxAttempts 2), then an incident"
large=$("$jb" start payment --vars '{"amount": 500}')
echo "started $large"
await "$large" incident
run instance show "$large"
run incidents list

say "5. The operator charged the card by phone: resolve the incident with the receipt"
incident=$("$jb" incidents list --instance "$large" --json | sed -n 's/^ *"id": *"\([^"]*\)".*/\1/p' | head -n 1)
run incident resolve "$incident" --vars '{"receipt": "paid by phone"}'
await "$large" completed
run instance show "$large"

say "6. A refund waits for the parcel: the warehouse's message may come first (kept 10 minutes)"
run message publish parcel-returned --key o-17 --ttl 10m --vars '{"condition": "as new"}'
refund=$("$jb" start refund --vars '{"orderId": "o-17", "amount": 40}')
echo "started $refund"

say "7. Accounting approves the refund from the task list"
i=0
until [ -n "$("$jb" tasks list --instance "$refund" --json | sed -n 's/^ *"id": *"\([^"]*\)".*/\1/p' | head -n 1)" ]; do
	i=$((i + 1))
	if [ $i -gt 150 ]; then echo "the refund's task did not appear" >&2; exit 1; fi
	sleep 0.2
done
run tasks list --group accounting
task=$("$jb" tasks list --instance "$refund" --json | sed -n 's/^ *"id": *"\([^"]*\)".*/\1/p' | head -n 1)
run task claim "$task" --user alice
run task complete "$task" --user alice --vars '{"approved": true}'
await "$refund" completed
run instance show "$refund"

say "8. A saga (examples/saga.bpmn): book, charge, ship. Out of stock, it undoes what completed, newest first"
run deploy examples/saga.bpmn
printf '$ jetbpm work --topic undo -- examples/undo.sh &\n'
"$jb" work --topic undo --log-level warn -- examples/undo.sh &
undo=$!
nostock=$("$jb" start saga --vars '{"orderId": "o-21", "amount": 30, "quantity": 2, "stock": 0}')
echo "started $nostock"
await "$nostock" completed
run instance show "$nostock"

say "9. No parcel to ship: an incident. The operator abandons it, then compensates the instance"
lost=$("$jb" start saga --vars '{"orderId": "o-22", "amount": 30, "quantity": 1, "stock": 5}')
echo "started $lost"
await "$lost" incident
incident=$("$jb" incidents list --instance "$lost" --json | sed -n 's/^ *"id": *"\([^"]*\)".*/\1/p' | head -n 1)
run incident abandon "$incident"
run instance show "$lost"
run instance compensate "$lost"
await "$lost" terminated
run instance show "$lost"

say "10. A Camunda 8 team's Go program, unchanged but for the address: the Zeebe Go client deploys, works the job and starts with result"
printf '$ go run ./examples/zeebe -gateway %s -order o-42\n' "$grpc"
go run ./examples/zeebe -gateway "$grpc" -order o-42

say "jetbpm is running (NATS on $JETBPM_NATS_URL, the Zeebe gateway on $grpc, the web console on http://$http/, metrics on http://$http/metrics)."
if [ -n "${JETBPM_DEMO_ONCE:-}" ]; then exit 0; fi
echo "Try: bin/jetbpm help, bin/jetbpm instances list. Ctrl-C stops it."
wait $serve
