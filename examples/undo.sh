#!/bin/sh
# A worker for topic "undo" (run by: jetbpm work --topic undo -- examples/undo.sh):
# the compensation handlers of examples/saga.bpmn. It sees the variables the
# undone activity saw when it completed, and records what it undid.
echo "{\"${JETBPM_NODE_ID}Done\": true}"
