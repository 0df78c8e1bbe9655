// Drives the real camunda-external-task-client-js 3.1.0 against a jetbpm
// /engine-rest: node run.mjs <baseUrl> <order.bpmn>. It deploys the model
// (multipart, as Camunda Modeler does), starts one instance per scenario
// and runs the workers; it prints a JSON summary on stdout and exits 0
// when every scenario finished, 1 otherwise. TestCamunda7JSClient checks
// the engine's side.
import { readFileSync } from "node:fs";
import { Client, Variables } from "camunda-external-task-client-js";

const [rawBaseUrl, bpmnPath] = process.argv.slice(2);
const baseUrl = rawBaseUrl.replace(/\/$/, ""); // as the client does
const summary = { instances: {}, seen: {}, errors: [] };
const fail = (msg) => {
  summary.errors.push(msg);
  console.log(JSON.stringify(summary));
  process.exit(1);
};
setTimeout(() => fail("timeout: not every scenario finished in 60 s"), 60000).unref();

async function rest(method, path, body) {
  const res = await fetch(baseUrl + path, {
    method,
    headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

// Deploy as Camunda Modeler's deploy button does.
const form = new FormData();
form.append("deployment-name", "jsclient");
form.append("deployment-source", "Camunda Modeler");
form.append("enable-duplicate-filtering", "false");
form.append("order.bpmn", new Blob([readFileSync(bpmnPath)], { type: "application/octet-stream" }), "order.bpmn");
const dep = await fetch(baseUrl + "/deployment/create", { method: "POST", body: form });
if (!dep.ok) fail(`deploy: ${dep.status} ${await dep.text()}`);

const done = {};
const finished = {};
for (const s of ["complete", "retry", "incident", "bpmnError", "extend", "unlock"]) {
  done[s] = new Promise((resolve) => (finished[s] = resolve));
}

const start = async (key, mode) => {
  const pi = await rest("POST", `/process-definition/key/${key}/start`, {
    businessKey: "bk-" + mode,
    variables: {
      mode: { value: mode, type: "String" },
      n: { value: 5, type: "Integer" },
      j: { value: JSON.stringify({ a: 1 }), type: "Json" },
      d: { value: "2024-01-02T03:04:05.000+0000", type: "Date" },
    },
  });
  summary.instances[mode] = pi.id;
};

const worker1 = new Client({ baseUrl, workerId: "js-1", asyncResponseTimeout: 2000, interval: 50, maxTasks: 10 });
worker1.on("poll:error", (e) => summary.errors.push("poll: " + e.message));
worker1.on("handler:error", (e) => summary.errors.push("handler: " + (e && e.message)));

const retried = new Set();
worker1.subscribe("js", async ({ task, taskService }) => {
  const mode = task.variables.get("mode");
  if (mode === "complete") {
    summary.seen.complete = {
      n: task.variables.get("n"),
      j: task.variables.get("j"),
      businessKey: task.businessKey,
      topicName: task.topicName,
      lockExpirationTime: task.lockExpirationTime,
      retries: task.retries,
    };
    const vars = new Variables();
    vars.set("out", 1);
    vars.set("big", 2 ** 40);
    vars.set("dbl", 1.5);
    vars.set("b", true);
    vars.set("obj", { k: "v" });
    vars.set("dt", new Date(0));
    vars.setTransient("tr", "x");
    const local = new Variables().set("loc", "l");
    await taskService.complete(task, vars, local);
    finished.complete();
  } else if (mode === "retry") {
    if (task.retries == null) {
      await taskService.handleFailure(task, { errorMessage: "boom", errorDetails: "stack", retries: 1, retryTimeout: 0 });
      retried.add(task.processInstanceId);
    } else {
      summary.seen.retry = { retries: task.retries, errorMessage: task.errorMessage };
      await taskService.complete(task, new Variables().set("retried", true));
      finished.retry();
    }
  } else if (mode === "incident") {
    await taskService.handleFailure(task, { errorMessage: "fatal: card store gone", errorDetails: "trace", retries: 0, retryTimeout: 0 });
    finished.incident();
  } else if (mode === "bpmnError") {
    await taskService.handleBpmnError(task, "DECLINED", "card declined", new Variables().set("reason", "limit"));
    finished.bpmnError();
  } else if (mode === "extend") {
    await taskService.extendLock(task, 5000);
    await taskService.complete(task, new Variables().set("extended", true));
    finished.extend();
  }
});

// The unlock scenario: worker 1 unlocks, worker 2 (started afterwards)
// gets the task and completes it.
let worker2;
const unlockSub = worker1.subscribe("js2", async ({ task, taskService }) => {
  unlockSub.unsubscribe();
  summary.seen.unlockedBy = task.workerId;
  await taskService.unlock(task);
  worker2 = new Client({ baseUrl, workerId: "js-2", asyncResponseTimeout: 2000, interval: 50 });
  worker2.on("poll:error", (e) => summary.errors.push("poll 2: " + e.message));
  worker2.subscribe("js2", async ({ task, taskService }) => {
    summary.seen.refetchedBy = task.workerId;
    await taskService.complete(task, new Variables().set("by", "js-2"));
    finished.unlock();
  });
});

// Let the first long polls start before the work exists.
await new Promise((r) => setTimeout(r, 300));
for (const mode of ["complete", "retry", "incident", "bpmnError", "extend"]) await start("jsorder", mode);
await start("jsunlock", "unlock");

await Promise.all(Object.values(done));
worker1.stop();
if (worker2) worker2.stop();
console.log(JSON.stringify(summary));
process.exit(summary.errors.length ? 1 : 0);
