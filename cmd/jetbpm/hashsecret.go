package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/jetbpm/jetbpm/internal/httpauth"
)

const hashSecretUsage = `usage: jetbpm hash-secret bcrypt|sha256

Reads a secret from the first line of stdin and prints what an HTTP auth
file (serve --http-auth, docs/http-api.md) holds for it: "bcrypt" the hash
of a user's password, "sha256" the digest of a bearer token. The secret
never appears on the command line.

  printf %s "$PASSWORD" | jetbpm hash-secret bcrypt
  openssl rand -hex 32 | tee token.txt | jetbpm hash-secret sha256`

func runHashSecret(ctx context.Context, args []string) error {
	const name = "hash-secret"
	fs := newFlagSet(name)
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(name, rest, "bcrypt|sha256"); err != nil {
		return err
	}
	line, err := bufio.NewReader(io.LimitReader(os.Stdin, 4096)).ReadString('\n')
	if err != nil && err != io.EOF {
		return fmt.Errorf("reading the secret from stdin: %w", err)
	}
	secret := strings.TrimRight(line, "\r\n")
	if secret == "" {
		return fmt.Errorf("no secret on stdin")
	}
	switch rest[0] {
	case "bcrypt":
		if len(secret) > 72 {
			return fmt.Errorf("the password is %d bytes; bcrypt takes at most 72", len(secret))
		}
		h, err := httpauth.HashPassword(secret)
		if err != nil {
			return err
		}
		fmt.Println(h)
	case "sha256":
		fmt.Println(httpauth.HashToken(secret))
	default:
		return usageErrorf(name, "unknown kind %q: want bcrypt or sha256", rest[0])
	}
	return nil
}
