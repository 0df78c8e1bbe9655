package rest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// Searches page by offset: from (default 0) and limit (default 100, at
// most maxLimit). Cursor paging (after, before) is refused.
const (
	defaultLimit = 100
	maxLimit     = 10000
)

type page struct {
	From   int     `json:"from"`
	Limit  int     `json:"limit"`
	After  *string `json:"after"`
	Before *string `json:"before"`
}

// check refuses what jetbpm's searches cannot honour.
func (p page) check(w http.ResponseWriter, r *http.Request) bool {
	switch {
	case p.After != nil || p.Before != nil:
		invalid(w, r, "cursor paging (page.after, page.before) is not supported by jetbpm: page with from and limit")
		return false
	case p.From < 0:
		invalid(w, r, "expected page.from to be at least 0, but it is %d", p.From)
		return false
	case p.Limit < 0 || p.Limit > maxLimit:
		invalid(w, r, "expected page.limit to be between 1 and %d, but it is %d", maxLimit, p.Limit)
		return false
	}
	return true
}

// window returns the bounds of the page in a list of n matches.
func (p page) window(n int) (lo, hi int) {
	limit := p.Limit
	if limit == 0 {
		limit = defaultLimit
	}
	lo = min(p.From, n)
	return lo, min(lo+limit, n)
}

type pageInfo struct {
	TotalItems        int     `json:"totalItems"`
	HasMoreTotalItems bool    `json:"hasMoreTotalItems"`
	StartCursor       *string `json:"startCursor"`
	EndCursor         *string `json:"endCursor"`
}

type searchResult[T any] struct {
	Items []T      `json:"items"`
	Page  pageInfo `json:"page"`
}

// A query is a search request.
type query struct {
	Filter json.RawMessage `json:"filter"`
	Page   page            `json:"page"`
	Sort   []any           `json:"sort"`
}

// decodeQuery reads a search request, its filter into filter: strictly —
// a field jetbpm does not filter by, or a value given as an operator
// ({"$eq": …}), is refused naming it, not ignored. order says in what
// order the results come, for the refusal of a sort. It answers the error
// itself and returns false.
func (h *Handler) decodeQuery(w http.ResponseWriter, r *http.Request, filter any, order string) (page, bool) {
	var q query
	if !h.decode(w, r, &q) || !q.Page.check(w, r) {
		return page{}, false
	}
	if len(q.Sort) > 0 {
		invalid(w, r, "sorting is not supported by jetbpm's searches: the results come %s", order)
		return page{}, false
	}
	if len(bytes.TrimSpace(q.Filter)) > 0 && string(bytes.TrimSpace(q.Filter)) != "null" {
		dec := json.NewDecoder(bytes.NewReader(q.Filter))
		dec.DisallowUnknownFields()
		if err := dec.Decode(filter); err != nil {
			msg := err.Error()
			if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
				invalid(w, r, "filtering by %s is not supported by jetbpm", f)
			} else {
				invalid(w, r, "the filter is not one jetbpm reads (plain values only, no operators): %v", err)
			}
			return page{}, false
		}
	}
	return q.Page, true
}
