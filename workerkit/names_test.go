package workerkit

import (
	"testing"

	"github.com/jetbpm/jetbpm/streams"
)

func TestNamesMatchStreams(t *testing.T) {
	if jobsStream != streams.JobsStream {
		t.Errorf("jobsStream = %q, streams.JobsStream = %q", jobsStream, streams.JobsStream)
	}
	for _, topic := range []string{"payments", "", "a.b", "a*>", "ünï code", "x-y_z"} {
		if got, want := topicConsumer(topic), streams.TopicConsumer(topic); got != want {
			t.Errorf("topicConsumer(%q) = %q, streams.TopicConsumer = %q", topic, got, want)
		}
	}
}
