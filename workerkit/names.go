package workerkit

import (
	"fmt"
	"strings"
)

// The names below repeat package streams' (JobsStream, TopicConsumer,
// Token) so a worker binary does not link the embedded NATS server that
// package streams carries; names_test.go keeps them equal.

const jobsStream = "JETBPM_JOBS"

// topicConsumer names the durable pull consumer of a topic.
func topicConsumer(topic string) string { return "topic-" + token(topic) }

// token makes s one subject token: letters, digits, '-' and '_' pass,
// every other byte becomes '=' and two hex digits.
func token(s string) string {
	if s == "" {
		return "="
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "=%02X", c)
	}
	return b.String()
}
