#!/bin/sh
# A worker for topic "charge" (run by: jetbpm work --topic charge -- examples/charge.sh).
# Cards are declined above 100: the job fails, the engine retries it, then
# raises an incident. Otherwise it prints the output the task completes with.
if [ "${JETBPM_VAR_amount:-0}" -gt 100 ]; then
  echo "card declined for amount $JETBPM_VAR_amount" >&2
  exit 1
fi
echo "{\"receipt\": \"r-$JETBPM_JOB_ID\"}"
