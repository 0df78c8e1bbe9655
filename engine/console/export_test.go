package console

// WithFactIndexCap sets how many fact sequences the fact index holds (and
// reads at start-up) at most, for the tests of its bound.
func WithFactIndexCap(n int) Option { return func(h *Handler) { h.indexCap = n } }

// FactIndexSize returns the sequences and entries the fact index holds.
func (h *Handler) FactIndexSize() (held, entries int) { return h.facts.size() }
