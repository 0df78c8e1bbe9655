// run.mjs drives the unmodified @camunda8/sdk's ZeebeGrpcClient against a
// jetbpm gateway, for TestCamunda8NodeSDK:
//
//	node run.mjs <host:port> <payment.bpmn> <orders.bpmn>
//
// It deploys both files, runs a worker for type "charge" that completes
// (amount 1), fails once with a retry then completes (amount 2), throws
// DECLINED (amount 3) and fails with no retries left (amount 4); it runs
// amounts 1-3 with result, starts 4 and an "order" that a published
// message releases, and prints one JSON summary line last.
import { Camunda8 } from '@camunda8/sdk'

const [address, paymentFile, ordersFile] = process.argv.slice(2)
const summary = { results: {}, instances: {}, seen: {}, errors: [] }
const c8 = new Camunda8({
  ZEEBE_GRPC_ADDRESS: `grpc://${address}`,
  CAMUNDA_AUTH_STRATEGY: 'NONE',
  CAMUNDA_LOG_LEVEL: 'none',
  zeebeGrpcSettings: { ZEEBE_CLIENT_LOG_LEVEL: 'NONE' },
})
const zeebe = c8.getZeebeGrpcApiClient()

let worker
try {
  const dep = await zeebe.deployResources([{ processFilename: paymentFile }, { processFilename: ordersFile }])
  summary.deployed = dep.deployments.map((d) => d.process.bpmnProcessId).sort()

  const failed = new Set()
  let fourFailed
  const fourDone = new Promise((resolve) => (fourFailed = resolve))
  worker = zeebe.createWorker({
    taskType: 'charge',
    id: 'node-1',
    timeout: 60000,
    taskHandler: async (job) => {
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
          const ack = await job.fail({ errorMessage: 'bank gone', retries: 0 })
          fourFailed()
          return ack
        }
        default:
          return job.complete({ result: amount * 10 })
      }
    },
  })

  for (const amount of [1, 2, 3]) {
    const r = await zeebe.createProcessInstanceWithResult({ bpmnProcessId: 'payment', variables: { amount }, requestTimeout: 30000 })
    summary.results[amount] = r.variables
    summary.instances[amount] = r.processInstanceKey
  }
  const four = await zeebe.createProcessInstance({ bpmnProcessId: 'payment', variables: { amount: 4 } })
  summary.instances[4] = four.processInstanceKey
  await Promise.race([fourDone, new Promise((_, reject) => setTimeout(() => reject(new Error('the job of amount 4 was not failed within 30 s')), 30000))])

  const order = await zeebe.createProcessInstance({ bpmnProcessId: 'order', variables: { orderId: 'o-node', amount: 8 } })
  summary.instances.order = order.processInstanceKey
  await zeebe.publishMessage({ name: 'paid', correlationKey: 'o-node', variables: { paidBy: 'node' }, timeToLive: 60000 })
} catch (e) {
  summary.errors.push(String(e?.stack ?? e))
}
try {
  await worker?.close()
  await zeebe.close()
} catch (e) {
  summary.errors.push('close: ' + String(e))
}
console.log(JSON.stringify(summary))
process.exit(0)
