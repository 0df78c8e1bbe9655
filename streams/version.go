package streams

import (
	"fmt"
	"strconv"
	"strings"
)

// version is a parsed nats-server version: major.minor.patch with an
// optional pre-release ("2.12.0-RC.3") and ignored build metadata ("+abc").
type version struct {
	major, minor, patch int
	pre                 string
}

// parseVersion accepts "2.12.0", "v2.12.0", "2.12.0-RC.3", "2.14.0-dev",
// "2.11.4+build.5" and "2.12" (patch 0).
func parseVersion(s string) (version, error) {
	raw := s
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexByte(s, '+'); i >= 0 {
		s = s[:i]
	}
	var v version
	if i := strings.IndexByte(s, '-'); i >= 0 {
		s, v.pre = s[:i], s[i+1:]
		if v.pre == "" {
			return version{}, fmt.Errorf("invalid version %q: empty pre-release", raw)
		}
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return version{}, fmt.Errorf("invalid version %q: want major.minor.patch", raw)
	}
	nums := [3]int{}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || p[0] == '+' {
			return version{}, fmt.Errorf("invalid version %q: %q is not a number", raw, p)
		}
		nums[i] = n
	}
	v.major, v.minor, v.patch = nums[0], nums[1], nums[2]
	return v, nil
}

// compare orders versions like semver: a pre-release sorts before its
// release (2.12.0-RC.1 < 2.12.0); two pre-releases compare by their
// dot-separated identifiers, numeric ones numerically.
func (v version) compare(o version) int {
	for _, d := range [...]int{v.major - o.major, v.minor - o.minor, v.patch - o.patch} {
		if d != 0 {
			return sign(d)
		}
	}
	switch {
	case v.pre == o.pre:
		return 0
	case v.pre == "":
		return 1
	case o.pre == "":
		return -1
	}
	a, b := strings.Split(v.pre, "."), strings.Split(o.pre, ".")
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := comparePreIdent(a[i], b[i]); c != 0 {
			return c
		}
	}
	return sign(len(a) - len(b))
}

func comparePreIdent(a, b string) int {
	na, errA := strconv.Atoi(a)
	nb, errB := strconv.Atoi(b)
	switch {
	case errA == nil && errB == nil:
		return sign(na - nb)
	case errA == nil: // numeric identifiers sort before alphanumeric ones
		return -1
	case errB == nil:
		return 1
	}
	return strings.Compare(a, b)
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func (v version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch)
	if v.pre != "" {
		s += "-" + v.pre
	}
	return s
}
