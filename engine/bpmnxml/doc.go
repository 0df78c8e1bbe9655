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
//	line 42: <bpmn:businessRuleTask id="score">: business rule tasks are not supported
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
// Events: none start and, at process level, message, signal and timer
// start (one timer start per process); none, error
// (errorRef resolved to the errorCode of the document's <error>; no
// errorRef throws code ""), terminate and message end; timer, message and
// link intermediate catch; none (with input and output mappings), message
// and link intermediate throw (links pair by the linkEventDefinition's
// name in a scope); error, timer and message boundary events (attachedToRef, cancelActivity, default true).
// Camunda 7 conditional events (conditionalEventDefinition with its
// condition, camunda:variableName and camunda:variableEvents): intermediate
// catch, boundary and event sub-process start. Timers: timeDuration, timeDate, timeCycle as
// ISO-8601 text or, for a cycle, a cron expression (Quartz in a Camunda 7
// document, else Spring's syntax as Zeebe reads it); Zeebe's FEEL literals =PT5S, ="PT5S", =duration("PT5S"),
// =date and time("..."), =cycle(duration("PT1H")) (read as R/PT1H) are
// read as their text. Any other FEEL (=reminderDelay,
// =duration(delay)) and Camunda 7's ${...} (whole, or inside text:
// PT${minutes}M) become Timer.Expr, evaluated each time the timer is
// armed; a process-level timer start event refuses them. A Camunda 7
// timeDuration written R[n]/duration is read as its duration, as Camunda 7
// does (it fires once).
//
// Activities: task, manualTask, userTask, scriptTask, serviceTask,
// receiveTask, sendTask and nested subProcess (its contents get Node.Scope = the
// sub-process id); a transaction is a subProcess with Node.Transaction,
// with its cancel end event and cancel boundary event (CancelEvent). Gateways: exclusive, parallel, inclusive and event-based
// (eventGatewayType Exclusive, the default). Sequence flows with conditionExpression (trimmed;
// language expr, feel or juel when given) and the default attribute of
// gateways and activities. Expressions are kept as written: ${...} and #{...}
// are JUEL, a leading = is FEEL, anything else expr-lang (package
// expression).
//
// # Messages
//
// Message events and receive and send tasks name a definitions-level
// <bpmn:message> with messageRef; it becomes Node.Message. A receive task
// without messageRef is Camunda 7's plain wait state: it has no message
// and waits for Engine.Trigger. Its name is
// Message.Name, or Message.NameExpr when it is an expression (Zeebe's
// "=..." FEEL, Camunda 7's "${...}"). Zeebe's <zeebe:subscription
// correlationKey="=expr"/> among the message's extension elements is the
// catches' Message.CorrelationKey (a key without a leading = is a static
// string); a process-level message start event takes no key, while an event
// sub-process's message start subscribes under it like a catch. In a Zeebe document
// (modeler:executionPlatform="Camunda Cloud", or, unmarked, one that uses
// any zeebe: element or attribute) a catch or receive task whose message
// has no key is refused, as Zeebe does; Camunda 7 messages carry none
// (docs/messages.md §2 says how such a catch is reached).
//
// A message throw (send task, message intermediate throw or end event)
// runs a job configured as a service task's (below): zeebe:taskDefinition,
// camunda:type="external" camunda:topic (Camunda 7 puts it on the send task
// and on a throw event's messageEventDefinition), jetbpm:worker, or an
// in-process operation (jetbpm:operation, camunda:class, ...); or it
// publishes its message itself with jetbpm:publish. Its messageRef is
// optional unless it publishes. Message flows are diagram only, as in
// Zeebe and Camunda 7.
//
// # User tasks
//
// A userTask's assignment, schedule, priority and form become Node.Human
// (nil when the task says nothing about them): its assignee, candidate
// users and groups, due and follow-up dates and priority are expressions,
// a static value becoming a literal expression ("alice" is `"alice"`, a
// comma list such as "sales, ops" stays one string, priority "70" is
// `70`); its form is kept as written.
//
//   - Camunda 7: camunda:assignee, camunda:candidateUsers,
//     camunda:candidateGroups, camunda:dueDate, camunda:followUpDate,
//     camunda:priority (a whole ${...} or #{...} is an expression, other
//     text static; text mixed with ${...} is refused), camunda:formKey or
//     camunda:formRef (Node.Human.FormID); the BPMN humanPerformer and
//     potentialOwner ("user(kermit), group(management), sales") with a
//     resourceAssignmentExpression.
//   - Zeebe: zeebe:assignmentDefinition (assignee, candidateUsers,
//     candidateGroups), zeebe:taskSchedule (dueDate, followUpDate),
//     zeebe:priorityDefinition (priority), each attribute =FEEL or static;
//     zeebe:formDefinition with one of formKey, formId and
//     externalReference. The zeebe:userTask marker (a Camunda user task
//     rather than a job-based one) changes nothing: both run the same.
//
// A static priority is an integer from 0 to 100; a static date an ISO 8601
// date-time with a time zone (2025-06-30T17:00:00Z). Every expression must
// compile. Input and output mappings, multi-instance and boundary events
// are those of any activity. A form the file holds becomes a Camunda
// Forms (form-js) schema, Node.Human.Form (docs/forms.md): the
// zeebe:userTaskForm a formKey "camunda-forms:bpmn:<id>" names, or a
// Camunda 7 generated form (camunda:formData; its formFields typed string,
// long, boolean, date or enum, with the constraints required, readonly,
// minlength, maxlength, min and max).
// Camunda 7 task listeners (camunda:taskListener: create, assignment,
// update, complete, delete, and timeout with the timerEventDefinition
// inside it; an expression or JavaScript) run (docs/usertasks.md §4.3),
// and Zeebe task listeners (zeebe:taskListeners: creating, assigning,
// updating, completing; jobs); canceling and Java task listeners,
// camunda:formHandlerClass, zeebe:taskHeaders on a user task (no job
// carries them), a field set twice (camunda:assignee and a humanPerformer,
// or a Camunda 7 attribute and its Zeebe counterpart) and a second form are
// refused. docs/bpmn-extensions.md has the reference.
//
// # Vendor extensions
//
// Service tasks (and message throws, which run jobs the same way):
//   - Camunda 7 camunda:type="external" camunda:topic="T": external worker
//     on topic T; a topic with ${...} in it is Worker.TopicExpr, evaluated
//     as each job is queued.
//   - Zeebe <zeebe:taskDefinition type="T" retries="3"/>: external worker on
//     topic T with 3 retries (retries may be a FEEL constant such as =3,
//     other expressions are refused; a type that is a FEEL expression other
//     than a constant is Worker.TopicExpr); <zeebe:taskHeaders> become
//     Worker.Headers.
//   - Camunda 7 <camunda:errorEventDefinition errorRef="E" expression="${true}"/>
//     on an external task: a catch-all error mapper rule throwing E's code
//     for every failure (after the task's jetbpm:rule elements), and
//     Worker.CompleteError, the same error for every completion, since
//     Camunda 7 evaluates it on both; ${false} or no expression adds
//     nothing; any other expression is refused (docs/bpmn-extensions.md).
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
// expr, feel or juel its text, a <camunda:list> or <camunda:map> the list
// or context of its values) become Node.Inputs and Node.Outputs.
//
// Camunda 7's <camunda:connector> with connectorId http-connector makes
// the task a job on HTTPConnectorTopic, with the connector's parameters
// around the task's own (connector.go).
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
// service tasks and message throws and jetbpm:resultVariable on script
// tasks, and extension elements that configure an external job (of a
// service task or a message throw), each at most once among the task's
// <extensionElements> (docs/bpmn-extensions.md has the reference, with
// examples):
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
// A message throw that runs no job may publish its message instead,
// model.Node.Publish (the builder's WithPublish): correlationKey, messageId
// and each variable's source are expressions (=FEEL, ${JUEL}, expr-lang
// otherwise), timeToLive a duration (default 0: not buffered), and a
// variable without source publishes the variable of its name:
//
//	<jetbpm:publish correlationKey="=orderId" timeToLive="PT1H" messageId="=paymentId">
//	  <jetbpm:variable name="amount" source="=total"/>
//	</jetbpm:publish>
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
// association, group, category, ioSpecification/dataInput/dataOutput/property
// declarations, performers (but for a user task's humanPerformer and
// potentialOwner with a resourceAssignmentExpression, above; one naming a
// <resource> is descriptive), message flows, definitions-level
// declarations (signal, itemDefinition, resource, ...; <error>,
// <message> and <escalation> are read when an element refers to them), unknown attributes,
// elements of other tools' namespaces, and modeler metadata among the
// extension elements: zeebe:properties, a zeebe:userTaskForm no user task
// names, zeebe:formDefinition and camunda:formData outside user tasks (a
// start event's form), zeebe:versionTag, camunda:properties,
// camunda:potentialStarter.
//
// # Deployed with a warning
//
// Some elements deploy but do not run as their author may expect; each
// adds a model.Warning (element, line, what jetbpm does) to its process's
// Warnings, which a deploy reports: dataObject, dataObjectReference,
// dataStoreReference, dataInputAssociation and dataOutputAssociation (data
// moves through variables and input/output mappings, as in Camunda 7 and
// Zeebe, so these are documentation); an errorRef naming no <bpmn:error>
// (its text is the code, as Camunda 7 takes it); a condition on an
// inclusive gateway's default flow (dropped, as BPMN says).
//
// Camunda 7 text that mixes text and ${...} ("user-${id}") in an
// assignee, candidate list, due date, priority, message or signal name,
// camunda:topic or input/output parameter is an expression that
// concatenates its parts as Camunda 7 does (expression.TranslateComposite);
// the model then holds the translated expr-lang source. A Camunda 7 signal
// name may be an expression (the name of a signal start event may not).
//
// Flow nodes and sequence flows without an id (the schema makes it
// optional) get a stable one: Flow_<sourceRef>_<targetRef> for a flow,
// <element>_<n> for the n-th id-less node of its kind, with _2, _3, ...
// added on a clash. A Camunda 7 script (bpmn:script) may go without a
// result variable, its value then dropped; a zeebe:script needs one, as in
// Zeebe. zeebe:taskDefinition retries="" is the default.
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
// With an error naming element, id and line, never dropped:
// businessRuleTask, standard loops (not yet), complexGateway, adHocSubProcess,
// start events other than none, message, signal and timer (in an event
// sub-process: timer, message, signal, error and escalation starts), message
// start events inside a sub-process, isInterrupting="false" outside an
// event sub-process, an escalationRef naming no <escalation>, a signal
// event without signalRef, conditional events in the
// Zeebe dialect and at process-level start (and a conditionalEventDefinition
// without one condition, or with a camunda:variableEvents other than
// create, update, delete), cancel event definitions other than a
// transaction's cancel end and boundary events,
// waitForCompletion="false" on a compensation throw, a link throw whose
// name has no catch in its scope, a message
// catch or message start without messageRef, a messageRef
// naming no <bpmn:message>, a message without name, a Zeebe catch whose message has no correlation key,
// zeebe:subscription anywhere but in a message, instantiate="true" on
// event-based gateways and receive tasks, eventGatewayType="Parallel",
// Camunda 7 implementation attributes on a throw event instead of its
// messageEventDefinition, jetbpm:publish on a throw that also runs a job
// or names no message, scripts and
// conditions in JVM languages (groovy, python, ...), Zeebe canceling task
// listeners, Camunda 7
// listeners that run Java (class, delegateExpression, camunda:field, a
// JVM script language),
// zeebe:assignmentDefinition, zeebe:taskSchedule, zeebe:priorityDefinition
// and zeebe:userTask anywhere but on a user task,
// camunda:connector but the http-connector, camunda:field, camunda:failedJobRetryTimeCycle (use
// jetbpm:retryPolicy), a camunda:errorEventDefinition whose expression is
// not a constant (use jetbpm:errorMapper), camunda:type other than "external", Zeebe job
// workers on script tasks, unknown camunda:/zeebe:/jetbpm: extension
// elements, and any other element of the BPMN namespace.
package bpmnxml
