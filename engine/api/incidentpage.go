package api

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/incidents"
)

// Paging incident lists. The list is ordered by first failure, then by id,
// so a position in it is a (first failure, id) pair: a cursor encodes
// one, and a page is the records strictly after (After) or strictly
// before (Before) it. A cursor names a position, not a record, so it
// stays valid when the record it came from is closed, expires or no
// longer matches: the next page starts where the last one ended, where an
// offset would skip the records after one that went away.

// pager is a decoded incident page request.
type pager struct {
	limit  int
	cursor *position // nil: from the start (or, with before, the end)
	before bool
}

type position struct {
	first time.Time
	id    string
}

// compare orders records as the list does.
func (p position) compare(r *incidents.Record) int {
	if c := p.first.Compare(r.FirstFailure); c != 0 {
		return c
	}
	return strings.Compare(p.id, r.ID)
}

func (p position) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(p.first.UTC().Format(time.RFC3339Nano) + " " + p.id))
}

func decodeCursor(s string) (*position, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: cursor %q: not one this list gave (pass a next or prev as it was)", engine.ErrInvalid, s)
	}
	ts, id, ok := strings.Cut(string(raw), " ")
	t, err := time.Parse(time.RFC3339Nano, ts)
	if !ok || err != nil || id == "" {
		return nil, fmt.Errorf("%w: cursor %q: not one this list gave (pass a next or prev as it was)", engine.ErrInvalid, s)
	}
	return &position{first: t, id: id}, nil
}

// pager checks the paging fields of the request.
func (r IncidentListRequest) pager() (pager, error) {
	pg := pager{limit: r.Limit}
	if r.Limit < 0 {
		return pg, fmt.Errorf("%w: limit %d: want 0 (all) or more", engine.ErrInvalid, r.Limit)
	}
	switch {
	case r.After != "" && r.Before != "":
		return pg, fmt.Errorf("%w: after and before: give one cursor", engine.ErrInvalid)
	case r.After != "":
		c, err := decodeCursor(r.After)
		pg.cursor = c
		return pg, err
	case r.Before != "":
		c, err := decodeCursor(r.Before)
		pg.cursor, pg.before = c, true
		return pg, err
	}
	return pg, nil
}

// page cuts the page out of list, the matching records in list order.
func (pg pager) page(list []*incidents.Record) IncidentListResponse {
	// [lo, hi) is the window the cursor leaves.
	lo, hi := 0, len(list)
	if pg.cursor != nil && !pg.before {
		for lo < hi && pg.cursor.compare(list[lo]) >= 0 {
			lo++
		}
	}
	if pg.cursor != nil && pg.before {
		for hi > lo && pg.cursor.compare(list[hi-1]) <= 0 {
			hi--
		}
	}
	if pg.limit > 0 && hi-lo > pg.limit {
		if pg.before {
			lo = hi - pg.limit // the records just before the cursor
		} else {
			hi = lo + pg.limit
		}
	}
	res := IncidentListResponse{Incidents: list[lo:hi], Total: len(list)}
	if res.Incidents == nil {
		res.Incidents = []*incidents.Record{}
	}
	// The page's ends; an empty page's ends are the cursor itself.
	first, last := pg.cursor, pg.cursor
	if hi > lo {
		first = &position{list[lo].FirstFailure, list[lo].ID}
		last = &position{list[hi-1].FirstFailure, list[hi-1].ID}
	}
	if hi < len(list) && last != nil {
		res.Next = last.String()
	}
	if lo > 0 && first != nil {
		res.Prev = first.String()
	}
	return res
}
