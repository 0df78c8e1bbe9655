// auth.mjs checks the unmodified client's CAMUNDA_AUTH_STRATEGY=BASIC
// against /v2 behind --http-auth, for TestOrchestrationClusterClientBasicAuth:
//
//	node auth.mjs <base URL> <user> <password>
//
// It reads the topology with the credentials given, then with a wrong
// password, and prints one JSON line: the partitions read, and the
// status of the refusal.
import createCamundaClient from '@camunda8/orchestration-cluster-api'

const [base, user, password] = process.argv.slice(2)
const client = (pw) =>
  createCamundaClient({
    config: {
      CAMUNDA_REST_ADDRESS: base,
      CAMUNDA_AUTH_STRATEGY: 'BASIC',
      CAMUNDA_BASIC_AUTH_USERNAME: user,
      CAMUNDA_BASIC_AUTH_PASSWORD: pw,
      CAMUNDA_SDK_VALIDATION: 'res:strict',
      CAMUNDA_SDK_LOG_LEVEL: 'silent',
      CAMUNDA_SDK_HTTP_RETRY_MAX_ATTEMPTS: 1,
    },
  })
const out = { errors: [] }
try {
  out.partitions = (await client(password).getTopology()).partitionsCount
} catch (e) {
  out.errors.push(String(e?.stack ?? e))
}
try {
  await client(password + '-wrong').getTopology()
  out.errors.push('a wrong password was let in')
} catch (e) {
  out.refused = e?.status ?? String(e)
}
console.log(JSON.stringify(out))
process.exit(0)
