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
// service tasks and jetbpm:resultVariable on script tasks. Anything else in
// it is refused.
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
// # Refused
//
// With an error naming element, id and line, never dropped: userTask,
// sendTask, receiveTask, businessRuleTask, callActivity (not yet),
// multi-instance and standard loops (not yet), inclusiveGateway (not yet),
// eventBasedGateway, complexGateway, intermediateThrowEvent, transaction,
// adHocSubProcess, event sub-processes, start events other than none,
// message, signal, escalation, conditional, link, compensate and cancel
// event definitions, message flows, data associations, scripts and
// conditions in other languages (javascript, groovy, ...), camunda:list and
// camunda:map parameters, execution and task listeners (camunda and zeebe),
// camunda:connector, camunda:field, camunda:errorEventDefinition,
// camunda:failedJobRetryTimeCycle (retries come from jetbpm's retry policy),
// camunda:type other than "external", Zeebe job workers on script tasks,
// unknown camunda:/zeebe:/jetbpm: extension elements, and any other element
// of the BPMN namespace.
package bpmnxml
