package main

import (
	"flag"
	"io"
	"log/slog"
	"os"

	"github.com/lmittmann/tint"
)

// logFlags choose the format and level of the log written to stderr.
type logFlags struct {
	format choice
	level  slog.Level
}

func addLogFlags(fs *flag.FlagSet) *logFlags {
	l := &logFlags{format: choice{value: "auto", allowed: []string{"auto", "text", "json"}}}
	fs.Var(&l.format, "log-format", "log `FORMAT`: auto (text on a terminal, else json), text or json")
	fs.TextVar(&l.level, "log-level", slog.LevelInfo, "log `LEVEL`: debug, info, warn or error")
	return l
}

// logger returns a logger writing to f: tinted text when f is a terminal
// (or --log-format text), JSON lines otherwise.
func (l *logFlags) logger(f *os.File) *slog.Logger {
	text := l.format.value == "text" || l.format.value == "auto" && isTerminal(f)
	return newLogger(f, text, isTerminal(f) && os.Getenv("NO_COLOR") == "", l.level)
}

func newLogger(w io.Writer, text, color bool, level slog.Level) *slog.Logger {
	if text {
		return slog.New(tint.NewTextHandler(w, &tint.Options{Level: level, NoColor: !color}))
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
