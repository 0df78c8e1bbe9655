// Package rest runs Camunda 8's REST connector (job type
// "io.camunda:http-json:1") as a jetbpm worker: a service task modelled
// with Camunda's REST connector template makes its HTTP call here, with
// the same inputs, result and error expressions, so the model runs on
// jetbpm unchanged.
//
// A Connector is a workerkit handler:
//
//	c, err := rest.New(rest.Config{Hosts: []string{"api.example.com"}})
//	w.Handle(rest.Type, c.Run, workerkit.Concurrency(16))
//
// `jetbpm serve --connectors http` does exactly that inside the engine's
// process (docs/scripts-listeners-connectors.md §3).
//
// # The job
//
// The task's input mappings, as the element template writes them, are
// the request: method (GET when absent), url, headers and
// queryParameters (contexts of strings), body (a string is sent as it
// is, anything else as JSON, or as a form when the Content-Type header
// says application/x-www-form-urlencoded), authentication (type noAuth,
// basic with username and password, bearer with token, apiKey with name,
// value and apiKeyLocation headers or query, or
// oauth-client-credentials-flow with oauthTokenEndpoint, clientId,
// clientSecret, scopes, audience and clientAuthentication
// basicAuthHeader or credentialsBody), connectionTimeoutInSeconds and
// readTimeoutInSeconds (20 when absent, 0 for none). Any string in them
// may hold {{secrets.NAME}}, replaced from Config.Secrets. Input the
// connector does not know is ignored: a task without input mappings hands
// it every variable.
//
// The response is a context {status, headers, body}: headers by their
// canonical names (Content-Type), a header sent more than once as a list;
// the body decoded as JSON when it is JSON, else a string, null when
// empty. The task's headers say what becomes of it:
//
//   - resultVariable: the whole response into that variable;
//   - resultExpression: a FEEL expression over the response (its fields,
//     and the response itself as response) whose context's entries become
//     variables;
//   - errorExpression: a FEEL expression over the task's input, response
//     and, when the call failed, error {code, message, response}; a
//     bpmnError(code, message, variables) ends the job with that BPMN
//     error, a jobError(message, variables, retries, retryBackoff) fails
//     it with that many retries left, null lets the outcome stand.
//
// # Failures
//
// An answer outside 2xx is a technical fault with the status as its code
// ("404"), which the task's retry policy retries (retries and
// retryBackoff of the template) and its ErrorMapper may classify; so is
// a network error or a timeout. What a retry cannot mend fails the job
// with no retries left, an incident at once, naming the cause: input
// that is not a request (a bad URL, an unknown authentication type), a
// host that is not on the allow-list, an unknown secret, a response body
// over Config.MaxResponse, an expression that does not compile or
// evaluate.
//
// # The allow-list
//
// The connector connects only to the hosts of Config.Hosts: "HOST" (any
// port), "HOST:PORT", or "*.DOMAIN" (any host under DOMAIN). The check is
// made on every connection it opens, so it holds for redirects (at most
// 5) and the OAuth token endpoint as well; no proxy is used. An empty
// list allows nothing.
package rest
