//go:build !unix

package bench

// readUsage reports nothing where getrusage does not exist: the bench
// prints its CPU and memory columns as zero there.
func readUsage() usage { return usage{} }
