package bpmnxml

import (
	"encoding/xml"
	"fmt"
	"strings"
)

// assignIDs gives each flow node and sequence flow of root's processes
// that has no id (the schema makes it optional, and Camunda 7 deploys such
// files) a stable one: the same document always gets the same ids. A
// sequence flow becomes Flow_<sourceRef>_<targetRef>, a node
// <element>_<n> counting the id-less elements of its kind in document
// order; a clash with an id the document uses adds _2, _3, ...
func assignIDs(root *elem) {
	used := map[string]bool{}
	var collect func(e *elem)
	collect = func(e *elem) {
		if id := strings.TrimSpace(e.attr("", "id")); id != "" {
			used[id] = true
		}
		for _, c := range e.children {
			collect(c)
		}
	}
	collect(root)
	unique := func(base string) string {
		id := base
		for i := 2; used[id]; i++ {
			id = fmt.Sprintf("%s_%d", base, i)
		}
		used[id] = true
		return id
	}
	counts := map[string]int{}
	var visit func(container *elem)
	visit = func(container *elem) {
		for _, e := range container.children {
			if e.name.Space != NamespaceBPMN {
				continue
			}
			local := e.name.Local
			_, node := nodeKinds[local]
			if !node && local != "sequenceFlow" {
				continue
			}
			if strings.TrimSpace(e.attr("", "id")) == "" {
				var base string
				if local == "sequenceFlow" {
					base = "Flow_" + e.attr("", "sourceRef") + "_" + e.attr("", "targetRef")
				} else {
					counts[local]++
					base = fmt.Sprintf("%s_%d", local, counts[local])
				}
				e.setAttr("id", unique(base))
			}
			if local == "subProcess" || local == "transaction" {
				visit(e)
			}
		}
	}
	for _, c := range root.children {
		if c.is(NamespaceBPMN, "process") {
			visit(c)
		}
	}
}

// setAttr sets the unprefixed attribute local to v.
func (e *elem) setAttr(local, v string) {
	for i, a := range e.attrs {
		if a.Name.Local == local && (a.Name.Space == "" || a.Name.Space == NamespaceBPMN) {
			e.attrs[i].Value = v
			return
		}
	}
	e.attrs = append(e.attrs, xml.Attr{Name: xml.Name{Local: local}, Value: v})
}
