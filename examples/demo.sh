#!/bin/sh
# make run: start jetbpm and walk through the whole story in a minute — a
# process with an external worker, a failure that is retried and becomes an
# incident, and an operator resolving it from the CLI. jetbpm keeps running
# afterwards; Ctrl-C stops it.
set -eu
cd "$(dirname "$0")/.."
jb=bin/jetbpm
data=${JETBPM_DATA:-./jetbpm-data}

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

"$jb" serve --data "$data" --log-level warn &
serve=$!
work=
trap 'kill $work $serve 2>/dev/null || true; wait 2>/dev/null || true' EXIT INT TERM
i=0
until "$jb" instances list >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 150 ]; then echo "jetbpm serve did not come up" >&2; exit 1; fi
	sleep 0.2
done

say "1. Deploy two processes (an order calculation, and a payment charged by a worker)"
run deploy examples/order.bpmn examples/payment.bpmn

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

say "jetbpm is running (NATS on nats://127.0.0.1:4222, metrics on http://127.0.0.1:9464/metrics)."
echo "Try: bin/jetbpm help, bin/jetbpm instances list. Ctrl-C stops it."
wait $serve
