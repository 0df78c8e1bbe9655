package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/jetbpm/jetbpm/cmd/jetbpm/internal/config"
)

// flagEnv names the environment variable that stands in for a flag; it
// comes before the configuration file.
var flagEnv = map[string]string{
	"nats-url": "JETBPM_NATS_URL",
	"creds":    "JETBPM_CREDS",
	"user":     "JETBPM_NATS_USER",
}

// applyConfig sets each flag the configuration file gives a value for,
// unless the command line (given) or the flag's environment variable set
// it already.
func applyConfig(fs *flag.FlagSet, file string, cfg *config.Config, given map[string]bool) error {
	for _, name := range slices.Sorted(maps.Keys(cfg.Flags)) {
		if env := flagEnv[name]; given[name] || env != "" && os.Getenv(env) != "" {
			continue
		}
		s := cfg.Flags[name]
		if err := fs.Set(name, s.Value); err != nil {
			return fmt.Errorf("%s:%d: %s: %q: %w", file, s.Line, s.Key, s.Value, err)
		}
	}
	return nil
}

// givenFlags are the names of the flags the command line set.
func givenFlags(fs *flag.FlagSet) map[string]bool {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	return given
}
