// run.mjs drives the unmodified @camunda8/orchestration-cluster-api (the
// Orchestration Cluster REST client) against jetbpm's /v2, for
// TestOrchestrationClusterClient:
//
//	node run.mjs <base URL> <payment.bpmn> <orders.bpmn> <review.bpmn>
//
// Every response is validated against the API's schemas
// (CAMUNDA_SDK_VALIDATION res:strict), so a field missing or of the wrong
// type fails the run. It reads the topology, deploys both files, runs a
// job worker for type "charge" that completes (amount 1), fails once with a
// retry then completes (amount 2), throws DECLINED (amount 3) and fails
// with no retries left (amount 4); it runs amounts 1-3 awaiting
// completion, finds amount 4's incident by search, resolves it (the job
// then completes), publishes a message that releases an "order" and
// correlates one to a second order, broadcasts a signal, cancels an
// instance; then, as Tasklist and Operate clients do, it finds the review
// process's definition and XML, works a review's user task (assign,
// update, unassign, complete), searches instances and variables, sets a
// variable; and prints one JSON summary line last.
import createCamundaClient from '@camunda8/orchestration-cluster-api'

const [base, paymentFile, ordersFile, reviewFile] = process.argv.slice(2)
const summary = { results: {}, instances: {}, seen: {}, errors: [] }
const camunda = createCamundaClient({
  config: {
    CAMUNDA_REST_ADDRESS: base,
    CAMUNDA_AUTH_STRATEGY: 'NONE',
    CAMUNDA_SDK_VALIDATION: 'res:strict',
    CAMUNDA_SDK_LOG_LEVEL: 'silent',
  },
})
const within = (p, ms, what) =>
  Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))])

let worker
try {
  const topology = await camunda.getTopology()
  summary.partitions = topology.partitionsCount

  const dep = await camunda.deployResourcesFromFiles([paymentFile, ordersFile, reviewFile])
  summary.deployed = dep.processes.map((p) => p.processDefinitionId).sort()

  const failed = new Set()
  let fourFailed
  const fourDone = new Promise((resolve) => (fourFailed = resolve))
  let resolvedDone
  const resolvedRan = new Promise((resolve) => (resolvedDone = resolve))
  worker = camunda.createJobWorker({
    jobType: 'charge',
    workerName: 'rest-1',
    maxParallelJobs: 4,
    jobTimeoutMs: 60000,
    pollIntervalMs: 50,
    jobHandler: async (job) => {
      const amount = job.variables.amount
      summary.seen[amount] = summary.seen[amount] ?? []
      summary.seen[amount].push({ retries: job.retries, headers: job.customHeaders, worker: job.worker })
      switch (amount) {
        case 2:
          if (!failed.has(job.processInstanceKey)) {
            failed.add(job.processInstanceKey)
            return job.fail({ errorMessage: 'bank down', retries: job.retries - 1, retryBackOff: 0 })
          }
          return job.complete({ result: 'second try' })
        case 3:
          return job.error({ errorCode: 'DECLINED', errorMessage: 'no funds', variables: { why: 'funds' } })
        case 4: {
          if (summary.seen[4].length > 1) {
            const ack = await job.complete({ result: 'after the incident' })
            resolvedDone()
            return ack
          }
          const ack = await job.fail({ errorMessage: 'bank gone', retries: 0, retryBackOff: 0 })
          fourFailed()
          return ack
        }
        default:
          return job.complete({ result: amount * 10 })
      }
    },
  })

  for (const amount of [1, 2, 3]) {
    const r = await camunda.createProcessInstance({
      processDefinitionId: 'payment',
      variables: { amount },
      awaitCompletion: true,
      requestTimeout: 30000,
    })
    summary.results[amount] = r.variables
    summary.instances[amount] = r.processInstanceKey
  }
  const four = await camunda.createProcessInstance({ processDefinitionId: 'payment', variables: { amount: 4 } })
  summary.instances[4] = four.processInstanceKey
  await within(fourDone, 30000, 'the job of amount 4 failed')
  const found = await camunda.searchIncidents(
    { filter: { processInstanceKey: four.processInstanceKey, state: 'ACTIVE' } },
    { consistency: { waitUpToMs: 10000, predicate: (r) => r.items.length > 0 } },
  )
  summary.incident = { errorType: found.items[0].errorType, errorMessage: found.items[0].errorMessage, elementId: found.items[0].elementId }
  await camunda.resolveIncident({ incidentKey: found.items[0].incidentKey })
  await within(resolvedRan, 30000, 'the job of amount 4 ran again after the incident was resolved')
  const instance = await camunda.getProcessInstance(
    { processInstanceKey: four.processInstanceKey },
    { consistency: { waitUpToMs: 10000, predicate: (p) => p.state === 'COMPLETED' } },
  )
  summary.fourState = instance.state

  const order = await camunda.createProcessInstance({ processDefinitionId: 'order', variables: { orderId: 'o-rest', amount: 8 } })
  summary.instances.order = order.processInstanceKey
  const pub = await camunda.publishMessage({ name: 'paid', correlationKey: 'o-rest', variables: { paidBy: 'rest' }, timeToLive: 60000 })
  summary.messageKey = pub.messageKey

  const hold = await camunda.createProcessInstance({ processDefinitionId: 'hold' })
  summary.instances.hold = hold.processInstanceKey
  const cancelled = await camunda.createProcessInstance({ processDefinitionId: 'hold' })
  summary.instances.cancelled = cancelled.processInstanceKey
  await camunda.cancelProcessInstance({ processInstanceKey: cancelled.processInstanceKey })
  summary.signalKey = (await camunda.broadcastSignal({ signalName: 'release' })).signalKey

  try {
    await camunda.correlateMessage({ name: 'paid', correlationKey: 'nobody' })
    summary.errors.push('a correlation nobody takes succeeded')
  } catch (e) {
    summary.uncorrelated = e?.status ?? String(e)
  }

  const now = { consistency: { waitUpToMs: 0 } }
  const defs = await camunda.searchProcessDefinitions({ filter: { processDefinitionId: 'review' } }, now)
  const def = defs.items[0]
  summary.review = { name: def.name, resource: def.resourceName }
  const xml = await camunda.getProcessDefinitionXml({ processDefinitionKey: def.processDefinitionKey }, now)
  summary.review.xmlBytes = String(xml).length
  const review = await camunda.createProcessInstance({ processDefinitionKey: def.processDefinitionKey, variables: { orderId: 'o-rest' } })
  const other = await camunda.createProcessInstance({ processDefinitionId: 'review', variables: { orderId: 'o-other' } })
  summary.instances.review = review.processInstanceKey
  summary.instances.otherReview = other.processInstanceKey
  const tasks = await camunda.searchUserTasks(
    { filter: { processInstanceKey: review.processInstanceKey } },
    { consistency: { waitUpToMs: 10000, predicate: (r) => r.items.length > 0 } },
  )
  const task = tasks.items[0]
  await camunda.assignUserTask({ userTaskKey: task.userTaskKey, assignee: 'alice' })
  await camunda.updateUserTask({ userTaskKey: task.userTaskKey, changeset: { priority: 70 } })
  const held = await camunda.getUserTask({ userTaskKey: task.userTaskKey }, now)
  summary.task = { name: held.name, assignee: held.assignee, priority: held.priority, candidateGroups: held.candidateGroups }
  await camunda.unassignUserTask({ userTaskKey: task.userTaskKey })
  await camunda.completeUserTask({ userTaskKey: task.userTaskKey, variables: { approved: true } })
  const done = await camunda.searchProcessInstances(
    { filter: { processDefinitionId: 'review', state: 'COMPLETED' } },
    { consistency: { waitUpToMs: 10000, predicate: (r) => r.items.length > 0 } },
  )
  summary.reviewsCompleted = done.items.map((i) => i.processInstanceKey)
  await camunda.createElementInstanceVariables({ elementInstanceKey: other.processInstanceKey, variables: { note: 'urgent' } })
  const vars = await camunda.searchVariables({ filter: { processInstanceKey: other.processInstanceKey } }, now)
  summary.otherVariables = Object.fromEntries(vars.items.map((v) => [v.name, v.value]))
} catch (e) {
  summary.errors.push(String(e?.stack ?? e) + (e?.body ? ' ' + JSON.stringify(e.body) : ''))
}
try {
  await worker?.stop()
} catch (e) {
  summary.errors.push('stop: ' + String(e))
}
console.log(JSON.stringify(summary))
process.exit(0)
