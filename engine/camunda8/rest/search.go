package rest

import "net/http"

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

func (p page) limit() int {
	if p.Limit == 0 {
		return defaultLimit
	}
	return p.Limit
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
