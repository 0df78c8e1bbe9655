package console_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// A small WebDriver BiDi client for the Firefox tests: BiDi is JSON
// commands and events over one WebSocket (w3c.github.io/webdriver-bidi).
// Neither the module nor its dependencies have a WebSocket client
// (chromedp talks to Chromium over a pipe), so wsConn below is the part
// of RFC 6455 a client needs: the opening handshake, masked text frames
// out, text frames (possibly fragmented), ping and close in.

// wsConn is a client WebSocket connection.
type wsConn struct {
	c  net.Conn
	r  *bufio.Reader
	mu sync.Mutex // one writer at a time
}

// wsDial opens a WebSocket to url (ws://host:port/path).
func wsDial(ctx context.Context, url string) (*wsConn, error) {
	rest, ok := strings.CutPrefix(url, "ws://")
	if !ok {
		return nil, fmt.Errorf("websocket %q: only ws:// URLs", url)
	}
	host, path, _ := strings.Cut(rest, "/")
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	var nonce [16]byte
	rand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])
	req := "GET /" + path + " HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	r := bufio.NewReader(c)
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("websocket handshake: %w", err)
	}
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if res.StatusCode != http.StatusSwitchingProtocols || res.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		c.Close()
		return nil, fmt.Errorf("websocket handshake: %s, accept %q", res.Status, res.Header.Get("Sec-WebSocket-Accept"))
	}
	c.SetDeadline(time.Time{})
	return &wsConn{c: c, r: r}, nil
}

// writeFrame sends one masked frame (a client must mask).
func (w *wsConn) writeFrame(opcode byte, payload []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	hdr := []byte{0x80 | opcode}
	switch n := len(payload); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n <= 0xFFFF:
		hdr = append(hdr, 0x80|126)
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	var mask [4]byte
	rand.Read(mask[:])
	hdr = append(hdr, mask[:]...)
	masked := make([]byte, len(payload))
	for i, b := range payload {
		masked[i] = b ^ mask[i%4]
	}
	_, err := w.c.Write(append(hdr, masked...))
	return err
}

// read returns the next text message, answering pings on the way.
func (w *wsConn) read() ([]byte, error) {
	var msg []byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(w.r, h[:]); err != nil {
			return nil, err
		}
		fin, opcode := h[0]&0x80 != 0, h[0]&0x0F
		n := uint64(h[1] & 0x7F)
		switch n {
		case 126:
			var ext [2]byte
			if _, err := io.ReadFull(w.r, ext[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(ext[:]))
		case 127:
			var ext [8]byte
			if _, err := io.ReadFull(w.r, ext[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(ext[:])
		}
		if h[1]&0x80 != 0 {
			return nil, errors.New("websocket: the server masked a frame")
		}
		if n > 64<<20 {
			return nil, fmt.Errorf("websocket: a frame of %d bytes", n)
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(w.r, payload); err != nil {
			return nil, err
		}
		switch opcode {
		case 0x8: // close
			return nil, io.EOF
		case 0x9: // ping
			if err := w.writeFrame(0xA, payload); err != nil {
				return nil, err
			}
			continue
		case 0xA: // pong
			continue
		}
		msg = append(msg, payload...) // text (1), binary (2) or a continuation (0)
		if fin {
			return msg, nil
		}
	}
}

func (w *wsConn) close() {
	w.writeFrame(0x8, nil)
	w.c.Close()
}

// A bidiSession sends commands and routes the answers and events.
type bidiSession struct {
	ws      *wsConn
	mu      sync.Mutex
	nextID  int
	waiting map[int]chan bidiAnswer
	onEvent func(method string, params json.RawMessage)
	done    chan struct{}
	err     error // why the connection ended, once done is closed
}

type bidiAnswer struct {
	Type    string          `json:"type"` // success, error or event
	ID      *int            `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   string          `json:"error"`
	Message string          `json:"message"`
}

// newBidiSession reads the connection until it closes; onEvent gets each
// event, on the reading goroutine.
func newBidiSession(ws *wsConn, onEvent func(method string, params json.RawMessage)) *bidiSession {
	s := &bidiSession{ws: ws, waiting: map[int]chan bidiAnswer{}, onEvent: onEvent, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			data, err := ws.read()
			if err != nil {
				s.err = err
				return
			}
			var a bidiAnswer
			if err := json.Unmarshal(data, &a); err != nil {
				s.err = fmt.Errorf("bidi: undecodable message %.200s: %v", data, err)
				return
			}
			if a.Type == "event" {
				s.onEvent(a.Method, a.Params)
				continue
			}
			if a.ID == nil {
				continue // an error about no command in particular
			}
			s.mu.Lock()
			ch := s.waiting[*a.ID]
			delete(s.waiting, *a.ID)
			s.mu.Unlock()
			if ch != nil {
				ch <- a
			}
		}
	}()
	return s
}

// call sends a command and decodes its result into out (nil: ignore it).
func (s *bidiSession) call(ctx context.Context, method string, params any, out any) error {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	ch := make(chan bidiAnswer, 1)
	s.waiting[id] = ch
	s.mu.Unlock()
	msg, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	if err := s.ws.writeFrame(0x1, msg); err != nil {
		return fmt.Errorf("bidi %s: %w", method, err)
	}
	select {
	case a := <-ch:
		if a.Type == "error" {
			return fmt.Errorf("bidi %s: %s: %s", method, a.Error, a.Message)
		}
		if out != nil {
			return json.Unmarshal(a.Result, out)
		}
		return nil
	case <-s.done:
		return fmt.Errorf("bidi %s: the connection ended: %v", method, s.err)
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.waiting, id)
		s.mu.Unlock()
		return fmt.Errorf("bidi %s: %w", method, ctx.Err())
	}
}
