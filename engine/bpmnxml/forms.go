package bpmnxml

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/jetbpm/jetbpm/engine/form"
)

// Task forms held in the file (docs/forms.md). Both become a Camunda
// Forms (form-js) JSON schema (package form) on model.Human.Form:
//
//	<bpmn:process id="p">
//	  <bpmn:extensionElements>
//	    <zeebe:userTaskForm id="review">{"components": [...]}</zeebe:userTaskForm>
//	  </bpmn:extensionElements>
//	  <bpmn:userTask id="t">
//	    <bpmn:extensionElements><zeebe:formDefinition formKey="camunda-forms:bpmn:review"/></bpmn:extensionElements>
//	  </bpmn:userTask>
//
//	<bpmn:userTask id="t">
//	  <bpmn:extensionElements>
//	    <camunda:formData>
//	      <camunda:formField id="amount" label="Amount" type="long" defaultValue="10">
//	        <camunda:validation><camunda:constraint name="min" config="1"/></camunda:validation>
//	      </camunda:formField>
//	    </camunda:formData>
//	  </bpmn:extensionElements>
//	</bpmn:userTask>

// embeddedFormPrefix starts a Zeebe formKey that names a
// zeebe:userTaskForm of the file.
const embeddedFormPrefix = "camunda-forms:bpmn:"

// formSchemaVersion is the form-js schema version a schema made from
// camunda:formData declares (what the vendored form-js 1.23 writes).
const formSchemaVersion = 19

// userTaskForms returns the file's zeebe:userTaskForm elements by id, from
// the extension elements of its processes.
func userTaskForms(root *elem) map[string]*elem {
	forms := map[string]*elem{}
	var walk func(e *elem)
	walk = func(e *elem) {
		for _, c := range e.children {
			if c.is(NamespaceZeebe, "userTaskForm") {
				forms[c.attr("", "id")] = c
				continue
			}
			walk(c)
		}
	}
	walk(root)
	return forms
}

// embeddedForm reads the zeebe:userTaskForm a formKey names, when it names
// one; the key stays on the task as written.
func (r *humanReader) embeddedForm(at *elem, formKey string) {
	id, ok := strings.CutPrefix(strings.TrimSpace(formKey), embeddedFormPrefix)
	if !ok {
		return
	}
	f := r.im.userTaskForms[id]
	if f == nil {
		r.report(at, "formKey %q names zeebe:userTaskForm %q, which this file does not have", formKey, id)
		return
	}
	schema, msg := checkFormSchema([]byte(f.text))
	if msg != "" {
		r.report(at, "formKey %q: zeebe:userTaskForm %q (line %d): %s", formKey, id, f.line, msg)
		return
	}
	r.h.Form = schema
}

// checkFormSchema checks that data is a form's schema (form.Parse). It
// returns the schema compacted, or why it is not one.
func checkFormSchema(data []byte) (string, string) {
	if _, err := form.Parse(data); err != nil {
		return "", err.Error()
	}
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return "", "not a form's JSON: " + err.Error()
	}
	return b.String(), ""
}

// formData makes the schema of Camunda 7's generated task form, c (nil:
// none).
func (r *humanReader) formData(c *elem) {
	if c == nil {
		return
	}
	s := form.Schema{Type: "default", SchemaVersion: formSchemaVersion, Components: []form.Component{}}
	seen := map[string]bool{}
	for _, f := range c.children {
		if !f.is(NamespaceCamunda, "formField") {
			continue
		}
		comp, ok := r.formField(f)
		if !ok {
			continue
		}
		if seen[comp.Key] {
			r.report(f, "field %q appears twice in the form; keep one", comp.Key)
			continue
		}
		seen[comp.Key] = true
		s.Components = append(s.Components, comp)
	}
	b, err := json.Marshal(s)
	if err != nil { // the schema holds strings, numbers and booleans only
		r.report(c, "the form: %v", err)
		return
	}
	r.h.Form = string(b)
}

// formField makes the component of one camunda:formField.
func (r *humanReader) formField(f *elem) (form.Component, bool) {
	id := strings.TrimSpace(f.attr("", "id"))
	if id == "" {
		r.report(f, "has no id: the id names the variable the field writes")
		return form.Component{}, false
	}
	label := strings.TrimSpace(f.attr("", "label"))
	if label == "" {
		label = id
	}
	c := form.Component{ID: "Field_" + id, Key: id, Label: label}
	typ := strings.TrimSpace(f.attr("", "type"))
	switch typ {
	case "long":
		c.Type, c.DecimalDigits = "number", new(int)
	case "boolean":
		c.Type = "checkbox"
	case "date":
		c.Type, c.Subtype, c.DateLabel, c.Label = "datetime", "date", label, ""
	case "enum":
		c.Type = "select"
		for _, v := range f.children {
			if v.is(NamespaceCamunda, "value") {
				val := v.attr("", "id")
				name := v.attr("", "name")
				if name == "" {
					name = val
				}
				c.Values = append(c.Values, form.Option{Label: name, Value: val})
			}
		}
		if len(c.Values) == 0 {
			r.report(f, "field %q: an enum field needs camunda:value elements to choose from", id)
			return c, false
		}
	default: // string, a custom type, none
		c.Type = "textfield"
	}
	if d, ok := f.lookup("", "defaultValue"); ok && !strings.Contains(d, "${") && !strings.Contains(d, "#{") {
		v, msg := formDefault(typ, d)
		if msg != "" {
			r.report(f, "field %q: defaultValue %q: %s", id, d, msg)
			return c, false
		}
		c.DefaultValue = v
	}
	for _, x := range f.children {
		if !x.is(NamespaceCamunda, "validation") {
			continue
		}
		for _, k := range x.children {
			if k.is(NamespaceCamunda, "constraint") && !r.constraint(&c, k) {
				return c, false
			}
		}
	}
	return c, true
}

// formDefault types a formField's defaultValue as the field.
func formDefault(typ, d string) (any, string) {
	switch typ {
	case "long":
		n, err := strconv.ParseInt(strings.TrimSpace(d), 10, 64)
		if err != nil {
			return nil, "not an integer"
		}
		return n, ""
	case "boolean":
		switch strings.TrimSpace(d) {
		case "true":
			return true, ""
		case "false":
			return false, ""
		}
		return nil, "want true or false"
	}
	return d, ""
}

// constraint applies one camunda:constraint to c.
func (r *humanReader) constraint(c *form.Component, k *elem) bool {
	name, config := k.attr("", "name"), strings.TrimSpace(k.attr("", "config"))
	v := c.Validate
	if v == nil {
		v = &form.Validate{}
	}
	bad := func(want string) bool {
		r.report(k, "field %q: constraint %s config %q: want %s", c.Key, name, config, want)
		return false
	}
	switch name {
	case "required":
		v.Required = true
	case "readonly":
		c.Readonly = true
	case "minlength", "maxlength":
		l, err := strconv.Atoi(config)
		if err != nil || l < 0 {
			return bad("a length, 0 or more")
		}
		n := float64(l)
		if name == "minlength" {
			v.MinLength = &n
		} else {
			v.MaxLength = &n
		}
	case "min", "max":
		n, err := strconv.ParseFloat(config, 64)
		if err != nil {
			return bad("a number")
		}
		if name == "min" {
			v.Min = &n
		} else {
			v.Max = &n
		}
	case "validator":
		r.report(k, "field %q: a validator constraint runs Java code; not supported", c.Key)
		return false
	default:
		r.report(k, "field %q: constraint %q is not one of required, readonly, minlength, maxlength, min, max", c.Key, name)
		return false
	}
	if *v != (form.Validate{}) {
		c.Validate = v
	}
	return true
}
