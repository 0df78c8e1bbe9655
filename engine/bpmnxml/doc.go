// Package bpmnxml imports BPMN 2.0 XML, as written by Camunda Modeler for
// Camunda 7 and Camunda 8 (Zeebe) or by other tools, into jetbpm process
// models.
//
//	procs, err := bpmnxml.ParseFile("order.bpmn")
//
// Parse returns the executable processes of one <definitions> document
// (isExecutable="true" or absent; processes of collaboration participants
// included), each validated by model.Process.Validate, with the XML line of
// every node and flow. Import problems are *Error values that name the
// element, its id and its line:
//
//	line 42: <bpmn:userTask id="review">: user tasks are not supported
//
// Up to 20 problems are reported at once, joined. Validation problems are
// *model.Error values with the same line. Elements are matched by namespace
// URI, never by prefix, and named in errors with the canonical prefixes
// bpmn:, camunda:, zeebe: and jetbpm:. Malformed XML is refused with its
// line, and so are documents over 10 MiB (MaxSize), with more than 200,000
// elements, or nested more than 200 deep.
//
// # Imported
//
// Events: none start; none, error (errorRef resolved to the errorCode of the
// document's <error>; no errorRef throws code "") and terminate end; timer
// intermediate catch; error and timer boundary events (attachedToRef,
// cancelActivity, default true). Timers: timeDuration, timeDate, timeCycle as
// ISO-8601 text; Zeebe's FEEL literals =PT5S, ="PT5S", =duration("PT5S"),
// =date and time("..."), =cycle(duration("PT1H")) (read as R/PT1H) are
// accepted, any other timer expression is refused.
//
// Activities: task, manualTask, scriptTask, serviceTask and nested
// subProcess (its contents get Node.Scope = the sub-process id). Gateways:
// exclusive and parallel. Sequence flows with conditionExpression (trimmed;
// language expr, feel or juel when given) and the default attribute of
// gateways and activities. Expressions are kept as written: ${...} and #{...}
// are JUEL, a leading = is FEEL, anything else expr-lang (package
// expression).
//
// # Vendor extensions
//
// Service tasks:
//   - Camunda 7 camunda:type="external" camunda:topic="T": external worker
//     on topic T.
//   - Zeebe <zeebe:taskDefinition type="T" retries="3"/>: external worker on
//     topic T with 3 retries (type and retries may be FEEL constants such as
//     ="T" or =3; other expressions are refused); <zeebe:taskHeaders> become
//     Worker.Headers.
//   - In-process: jetbpm:operation="name", or Camunda 7 camunda:class,
//     camunda:delegateExpression or camunda:expression, whose text becomes
//     Service.Operation, a name the engine resolves among its registered
//     operations. jetbpm:timeout="PT30S" (hours/minutes/seconds only) bounds
//     it.
//
// Script tasks: Zeebe <zeebe:script expression="=a+b" resultVariable="x"/>;
// or scriptFormat + <script> with camunda:resultVariable or
// jetbpm:resultVariable, for scriptFormat expr, feel or juel only.
//
// Mappings: Zeebe <zeebe:ioMapping> input/output (a source without a
// leading = is a static string) and Camunda 7 <camunda:inputOutput>
// inputParameter/outputParameter (${...} text is an expression, other text
// a string, an empty parameter null, a nested <camunda:script> in format
// expr, feel or juel its text) become Node.Inputs and Node.Outputs.
//
// Every camunda: and zeebe: attribute of a node is recorded in
// Node.Extensions (e.g. "camunda:asyncBefore", "camunda:exclusive",
// "camunda:taskPriority", "camunda:jobPriority", "camunda:class") for
// diagnostics; jetbpm does not act on them: jetbpm persists every step, so
// async continuations and job priorities have no counterpart.
//
// # jetbpm namespace
//
// Namespace (https://jetbpm.dev/schema/bpmn/1.0, conventionally prefixed
// jetbpm:) defines the attributes jetbpm:operation and jetbpm:timeout on
// service tasks and jetbpm:resultVariable on script tasks, and extension
// elements that configure an external service task's job, each at most
// once among the task's <extensionElements> (docs/bpmn-extensions.md has
// the reference, with examples):
//
//	<jetbpm:worker topic="payments" trust="engineAuthoritative" lockDuration="PT2M" maxLockDuration="PT1H"/>
//	<jetbpm:retryPolicy kind="exponential" maxAttempts="5" base="PT0.5S" cap="PT30S" jitter="0.2"/>
//	<jetbpm:errorMapper>
//	  <jetbpm:rule code="404" when="body.type == 'NOT_FOUND'" status="NOT_FOUND"/>
//	  <jetbpm:rule code="409" bpmnError="ResourceConflict" message="..."/>
//	  <jetbpm:rule code="500" technical="true"/>
//	</jetbpm:errorMapper>
//	<jetbpm:outputMapping>
//	  <jetbpm:output path="body.data.id" variable="orderId" required="true"/>
//	</jetbpm:outputMapping>
//	<jetbpm:status variable="lookupResult" overwrite="false"/>
//
// They become model.Worker.Options (the builder's WithWorkerTrust,
// WithLockDuration, WithMaxLockDuration, WithRetryPolicy, WithErrorMapper
// or WithCustomErrorMapper, WithOutputMapping and WithStatus):
//
//   - jetbpm:worker: topic makes the task external (instead of
//     camunda:type="external" or zeebe:taskDefinition; without topic it
//     configures a task made external by those); trust is workerTrusted or
//     engineAuthoritative; lockDuration and maxLockDuration are positive.
//   - jetbpm:retryPolicy: kind none, fixed (delay), exponential (base, cap,
//     jitter; omitted ones are the default policy's PT0.5S, PT30S, 0.2) or
//     custom (name of a policy registered with the engine); maxAttempts
//     counts executions and defaults to the zeebe:taskDefinition retries,
//     else 3.
//   - jetbpm:errorMapper: jetbpm:rule children, first match wins, each
//     with optional code and when (a predicate over code and body) and one
//     outcome: bpmnError (with optional message), status, statusFrom (an
//     expression) or technical="true"; or custom="name", a Go ErrorMapper
//     registered with the engine (the job then runs engineAuthoritative).
//   - jetbpm:outputMapping: jetbpm:output children, path (an expression
//     over body) to variable, optionally required.
//   - jetbpm:status: the variable a status outcome writes; overwrite
//     defaults to false.
//
// One more element may be on any activity (a task of any kind, a
// sub-process, a call activity, a multi-instance activity), once: its
// incident retry policy, model.Node.IncidentRetry (the builder's
// WithIncidentRetry, docs/incidents.md §4), in jetbpm:retryPolicy's syntax
// without kind custom and jitter. maxAttempts counts the activity's runs
// for one incident and defaults to 3, whatever zeebe:taskDefinition
// retries say:
//
//	<jetbpm:incidentRetry kind="fixed" maxAttempts="2" delay="PT10S"/>
//
// Durations are ISO-8601 in hours, minutes and seconds (PT30S, PT0.5S,
// PT1H30M). Every malformed attribute, an attribute that does not belong
// to the element or to the retry kind, a rule without exactly one outcome,
// a status rule without jetbpm:status, a repeated element, a retryPolicy
// whose maxAttempts contradicts zeebe:taskDefinition retries, a custom
// mapper with trust="workerTrusted", any job option on a task that runs
// in process (jetbpm:operation, camunda:class, ...) or on another element,
// and jetbpm:incidentRetry on anything but an activity is refused with the
// line of the extension element. Anything else in the namespace is
// refused.
//
// # Ignored
//
// Accepted silently because they carry no execution semantics: diagram
// interchange (bpmndi, dc, di), documentation, incoming/outgoing (redundant
// with the sequence flows), laneSet/lane/flowNodeRef, textAnnotation,
// association, group, category, dataObject, dataObjectReference,
// dataStoreReference, ioSpecification/dataInput/dataOutput/property
// declarations (data only moves through data associations, which are
// refused), performers, definitions-level declarations (message, signal,
// escalation, itemDefinition, resource, ...; only <error> is used), unknown
// attributes, elements of other tools' namespaces, and modeler metadata
// among the extension elements: zeebe:properties, zeebe:userTaskForm,
// zeebe:formDefinition, zeebe:assignmentDefinition, zeebe:versionTag,
// zeebe:subscription, camunda:properties, camunda:formData,
// camunda:potentialStarter.
//
// # Call activities
//
// calledElement (or zeebe:calledElement processId), the latest version by
// default, camunda:calledElementBinding="version" with
// camunda:calledElementVersion to pin one. Zeebe semantics: every variable
// passes in, every variable of the child passes back unless
// propagateAllChildVariables="false"; zeebe:ioMapping shapes both. Camunda
// semantics (a call activity with camunda:in/out or other camunda:
// attributes): only what camunda:in/out name crosses (source or
// sourceExpression → target), or everything with variables="all".
//
// # Multi-instance
//
// multiInstanceLoopCharacteristics on any activity: isSequential,
// loopCardinality, completionCondition, camunda:collection and
// camunda:elementVariable, or zeebe:loopCharacteristics (inputCollection,
// inputElement, outputCollection, outputElement). Data-item forms
// (loopDataInputRef, inputDataItem) are refused.
//
// # Refused
//
// With an error naming element, id and line, never dropped: userTask,
// sendTask, receiveTask, businessRuleTask,
// standard loops (not yet), inclusiveGateway (not yet),
// eventBasedGateway, complexGateway, intermediateThrowEvent, transaction,
// adHocSubProcess, event sub-processes, start events other than none,
// message, signal, escalation, conditional, link, compensate and cancel
// event definitions, message flows, data associations, scripts and
// conditions in other languages (javascript, groovy, ...), camunda:list and
// camunda:map parameters, execution and task listeners (camunda and zeebe),
// camunda:connector, camunda:field, camunda:failedJobRetryTimeCycle (use
// jetbpm:retryPolicy), camunda:errorEventDefinition (use
// jetbpm:errorMapper), camunda:type other than "external", Zeebe job
// workers on script tasks, unknown camunda:/zeebe:/jetbpm: extension
// elements, and any other element of the BPMN namespace.
package bpmnxml
