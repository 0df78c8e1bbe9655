package jobs

import (
	"fmt"
	"strconv"
	"strings"
)

// Delivery identifies one delivery of a job message, as parsed from its ack
// reply subject.
type Delivery struct {
	Stream   string
	Consumer string
	Count    uint64 // delivery count: 1 for the first delivery
	Seq      uint64 // stream sequence of the message
}

// ParseDelivery parses a JetStream ack reply subject, in the v1 form
// $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending> or
// the v2 form $JS.ACK.<domain>.<account>.<stream>.<consumer>.<delivered>.
// <sseq>.<cseq>.<ts>.<pending>[.<token>].
func ParseDelivery(subject string) (Delivery, error) {
	tokens := strings.Split(subject, ".")
	if len(tokens) < 9 || tokens[0] != "$JS" || tokens[1] != "ACK" {
		return Delivery{}, fmt.Errorf("delivery %q is not a JetStream reply subject", subject)
	}
	var i int
	switch len(tokens) {
	case 9:
		i = 2
	case 11, 12:
		i = 4
	default:
		return Delivery{}, fmt.Errorf("delivery %q has %d tokens, want 9, 11 or 12", subject, len(tokens))
	}
	count, err1 := strconv.ParseUint(tokens[i+2], 10, 64)
	seq, err2 := strconv.ParseUint(tokens[i+3], 10, 64)
	if err1 != nil || err2 != nil || count == 0 || seq == 0 {
		return Delivery{}, fmt.Errorf("delivery %q has a bad delivery count or sequence", subject)
	}
	return Delivery{Stream: tokens[i], Consumer: tokens[i+1], Count: count, Seq: seq}, nil
}
