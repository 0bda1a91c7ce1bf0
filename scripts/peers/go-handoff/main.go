// go-handoff: the Go net/http peer of platoon-server. GET /fruits makes a blocking GET /fruits
// to the backend (platoon-mock) over pooled keep-alive connections, decodes the JSON into
// structs and answers it re-encoded compactly, as platoon-server does without --passthrough.
//
// The hand-off is Go's own: net/http serves each connection on its own goroutine, and the
// handler's blocking http.Client call parks that goroutine on the runtime's netpoller (epoll)
// while the Ps (GOMAXPROCS) run other goroutines. Standard library only.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// Fruit and Catalogue mirror server/common/fruits.hpp.
type Fruit struct {
	Name  string  `json:"name"`
	Color string  `json:"color"`
	Price float64 `json:"price"`
}

type Catalogue struct {
	Fruits []Fruit `json:"fruits"`
}

type handoff struct {
	client     *http.Client
	backendURL string
	timeout    time.Duration
}

func plain(w http.ResponseWriter, status int, msg string) {
	body := msg + "\n"
	h := w.Header()
	h.Set("Content-Type", "text/plain")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// gatewayStatus: 504 when the backend did not answer in time, 502 for anything else.
func gatewayStatus(err error) int {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout()) {
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

func (h *handoff) fruits(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		plain(w, http.StatusMethodNotAllowed, "only GET is served")
		return
	}
	// The blocking backend call; the deadline covers connect, request and the whole body.
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.backendURL, nil)
	if err != nil {
		plain(w, http.StatusBadGateway, err.Error())
		return
	}
	resp, err := h.client.Do(req)
	if err != nil {
		plain(w, gatewayStatus(err), "backend: "+err.Error())
		return
	}
	body, err := io.ReadAll(resp.Body) // read to EOF so the connection goes back to the pool
	resp.Body.Close()
	if err != nil {
		plain(w, gatewayStatus(err), "backend body: "+err.Error())
		return
	}
	if resp.StatusCode != http.StatusOK {
		plain(w, http.StatusBadGateway, "backend answered "+strconv.Itoa(resp.StatusCode))
		return
	}

	// The JSON work: into structs, and back out compact.
	var c Catalogue
	if err := json.Unmarshal(body, &c); err != nil {
		plain(w, http.StatusBadGateway, "backend body: invalid JSON: "+err.Error())
		return
	}
	if c.Fruits == nil {
		plain(w, http.StatusBadGateway, `backend body: JSON has no "fruits" array`)
		return
	}
	out, err := json.Marshal(&c)
	if err != nil {
		plain(w, http.StatusInternalServerError, err.Error())
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

func main() {
	host := flag.String("host", "127.0.0.1", "address to bind")
	port := flag.Int("port", 8080, "port to listen on (0: any free port)")
	backend := flag.String("backend", "127.0.0.1:8081", "backend HOST:PORT (platoon-mock)")
	timeoutMs := flag.Int("backend-timeout-ms", 1000, "backend call timeout, connect to last body byte (then 504)")
	conns := flag.Int("backend-connections", 1024, "idle keep-alive backend connections kept (MaxIdleConnsPerHost)")
	procs := flag.Int("gomaxprocs", 0, "GOMAXPROCS (0: the GOMAXPROCS environment variable, else the CPUs allowed)")
	idleMs := flag.Int("idle-timeout-ms", 60000, "close keep-alive client connections idle this long")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "go-handoff: Go net/http peer of platoon-server.\n"+
			"GET /fruits calls GET /fruits on the backend (blocking call on the connection's goroutine,\n"+
			"pooled keep-alive connections), decodes the JSON into structs and answers it compact.\n\n"+
			"usage: %s --port N --backend HOST:PORT [options]\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	fail := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "go-handoff: "+format+"\n", a...)
		os.Exit(2)
	}
	if flag.NArg() > 0 {
		fail("unexpected argument %q (see --help)", flag.Arg(0))
	}
	if *port < 0 || *port > 65535 {
		fail("--port must be 0..65535, got %d", *port)
	}
	if bh, bp, err := net.SplitHostPort(*backend); err != nil || bh == "" || bp == "" {
		fail("--backend must be HOST:PORT, got %q", *backend)
	}
	if *timeoutMs < 1 || *conns < 1 || *procs < 0 || *idleMs < 1 {
		fail("--backend-timeout-ms, --backend-connections and --idle-timeout-ms must be positive, --gomaxprocs >= 0")
	}
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	timeout := time.Duration(*timeoutMs) * time.Millisecond

	transport := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          0, // no limit over all hosts; the one that matters is per host:
		MaxIdleConnsPerHost:   *conns,
		MaxConnsPerHost:       0, // as many as there are requests in flight
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true, // no "Accept-Encoding: gzip": the body comes as is
		ForceAttemptHTTP2:     false,
		ResponseHeaderTimeout: timeout,
	}
	h := &handoff{
		client:     &http.Client{Transport: transport},
		backendURL: "http://" + *backend + "/fruits",
		timeout:    timeout,
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/fruits", h.fruits)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		plain(w, http.StatusNotFound, "not found: "+r.URL.Path)
	})
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Duration(*idleMs) * time.Millisecond,
		MaxHeaderBytes:    8192,
	}

	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-handoff: cannot listen: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("go-handoff pid %d GOMAXPROCS %d backend %s timeout %v\n", os.Getpid(), runtime.GOMAXPROCS(0), *backend, timeout)
	fmt.Printf("listening on %s\n", ln.Addr().String())

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case sig := <-stop:
		fmt.Printf("go-handoff: %v, stopping\n", sig)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	case err := <-done:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "go-handoff: %v\n", err)
			os.Exit(1)
		}
	}
}
