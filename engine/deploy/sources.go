package deploy

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/streams"
)

// maxSourceBytes bounds a BPMN document kept by a deploy, uncompressed.
const maxSourceBytes = 64 << 20

// SourceRecord is the value of a SourceKey: the document's name (a file
// name), the id of the deploy that wrote it and the document.
type SourceRecord struct {
	Name       string `msgpack:"name,omitempty"`
	Deployment string `msgpack:"deployment,omitempty"`
	Gzip       []byte `msgpack:"gzip"`
}

// SourceOf reads the source record of version v of processID; ok is false
// for a version deployed without one (built in Go).
func (d *Definitions) SourceOf(ctx context.Context, processID string, v int) (rec SourceRecord, ok bool, err error) {
	entry, err := d.kv.Get(ctx, streams.SourceKey(processID, v))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return rec, false, nil
	case err != nil:
		return rec, false, fmt.Errorf("process %s v%d: read source: %w", processID, v, err)
	}
	if err := streams.Unmarshal(entry.Value(), &rec); err != nil {
		return rec, false, fmt.Errorf("process %s v%d: decode source: %w", processID, v, err)
	}
	return rec, true, nil
}

// sourceWrite is the write, in a deploy's batch, of the document version v
// of processID was imported from. Written without expectations: a
// version's source is only ever written by the batch that moves the
// pointer to it.
func sourceWrite(processID string, v int, src Resource, deployment string, limit int) (*nats.Msg, error) {
	if len(src.XML) > maxSourceBytes {
		return nil, fmt.Errorf("%w: process %s: its BPMN document is %d bytes; at most %d", errdefs.ErrTooLarge, processID, len(src.XML), maxSourceBytes)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(src.XML); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	body, err := streams.Marshal(SourceRecord{Name: src.Name, Deployment: deployment, Gzip: buf.Bytes()})
	if err != nil {
		return nil, err
	}
	if len(body) > limit {
		return nil, fmt.Errorf("%w: process %s: its BPMN document is %d bytes compressed; the server takes at most %d",
			errdefs.ErrTooLarge, processID, len(body), limit)
	}
	m := nats.NewMsg(streams.KVSubject(streams.DefinitionsBucket, streams.SourceKey(processID, v)))
	m.Data = body
	return m, nil
}

// Source returns the BPMN document version v (0: the latest) of processID
// was imported from; errdefs.ErrNotFound for a version built in Go.
func (d *Definitions) Source(ctx context.Context, processID string, v int) ([]byte, error) {
	p, err := d.Get(ctx, processID, v)
	if err != nil {
		return nil, err
	}
	rec, ok, err := d.SourceOf(ctx, processID, p.Version)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("process %q version %d has no BPMN source (deployed from Go, or by a jetbpm that kept none): %w", processID, p.Version, errdefs.ErrNotFound)
	}
	zr, err := gzip.NewReader(bytes.NewReader(rec.Gzip))
	if err != nil {
		return nil, fmt.Errorf("process %s v%d: decode source: %w", processID, p.Version, err)
	}
	xml, err := io.ReadAll(io.LimitReader(zr, maxSourceBytes+1))
	if err != nil {
		return nil, fmt.Errorf("process %s v%d: decode source: %w", processID, p.Version, err)
	}
	if len(xml) > maxSourceBytes {
		return nil, fmt.Errorf("%w: process %s v%d: source is over %d bytes", errdefs.ErrTooLarge, processID, p.Version, maxSourceBytes)
	}
	return xml, nil
}
