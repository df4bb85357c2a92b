// Command loadgen is bench:webhook's open-loop load generator: it posts
// AdmissionReview bodies to the webhook at a fixed rate over TLS, the way
// the API server calls a webhook (Go's net/http with the API server's idle
// connection settings), checks every verdict, and prints one JSON object
// with the latencies.
//
// Open loop: request i is due at start + i/rate and sent on its own
// goroutine; its latency runs from the due time to the end of the reply,
// so a slow reply never lowers the rate (coordinated omission). Go's
// timers wake within tens of microseconds, so the figures are the
// server's, not the generator's.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// body is one AdmissionReview to send, as bench/webhook_bodies.ts makes it.
type body struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	Template string `json:"template"`
	Allowed  bool   `json:"allowed"`
}

// result is what loadgen prints.
type result struct {
	Protocol     string         `json:"protocol"`
	Sent         int            `json:"sent"`
	P50Ms        float64        `json:"p50Ms"`
	P99Ms        float64        `json:"p99Ms"`
	MaxMs        float64        `json:"maxMs"`
	ServiceP99Ms float64        `json:"serviceP99Ms"`
	MaxSendLagMs float64        `json:"maxSendLagMs"`
	Errors       map[string]int `json:"errors"`
}

func main() {
	base := flag.String("url", "", "webhook base URL, https://host:port")
	caFile := flag.String("ca", "", "CA certificate (PEM) the server's certificate chains to")
	bodiesFile := flag.String("bodies", "", "JSON array of {name, path, template, allowed}")
	rate := flag.Float64("rate", 200, "requests per second")
	seconds := flag.Float64("seconds", 30, "how long to send")
	warmup := flag.Float64("warmup", 3, "seconds sent before the measured run")
	serve := flag.String("serve", "", "instead: serve a bare control webhook over TLS on this address (-cert, -key) until stdin closes")
	cert := flag.String("cert", "", "with -serve: certificate (PEM)")
	key := flag.String("key", "", "with -serve: private key (PEM)")
	flag.Parse()
	if *serve != "" {
		if err := serveControl(*serve, *cert, *key); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*base, *caFile, *bodiesFile, *rate, *seconds, *warmup); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(base, caFile, bodiesFile string, rate, seconds, warmup float64) error {
	if base == "" || caFile == "" || bodiesFile == "" {
		return fmt.Errorf("-url, -ca and -bodies are required")
	}
	if !(rate > 0 && seconds > 0 && warmup >= 0) {
		return fmt.Errorf("-rate and -seconds must be > 0 and -warmup >= 0, got %v, %v, %v", rate, seconds, warmup)
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return fmt.Errorf("no certificate in %s", caFile)
	}
	var bodies []body
	raw, err := os.ReadFile(bodiesFile)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &bodies); err != nil || len(bodies) == 0 {
		return fmt.Errorf("%s: expected a non-empty JSON array of bodies: %v", bodiesFile, err)
	}
	// HTTP/1.1 only, as the API server calls a Service-backed webhook
	cfg := &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}}
	client := &http.Client{
		Timeout: 3 * time.Second, // the configuration's timeoutSeconds
		Transport: &http.Transport{
			TLSClientConfig:     cfg,
			MaxIdleConnsPerHost: 25, // what the API server's clients keep
			IdleConnTimeout:     90 * time.Second,
		},
	}
	g := &generator{base: base, bodies: bodies, client: client}
	// every body once, sequentially: a wrong verdict fails fast
	for i := range bodies {
		if msg := g.send(i, fmt.Sprintf("check-%d", i)); msg != "" {
			return fmt.Errorf("%s: %s", bodies[i].Name, msg)
		}
	}
	if warmup > 0 {
		g.openLoop(rate, warmup, "warmup")
	}
	r := g.openLoop(rate, seconds, "bench")
	return json.NewEncoder(os.Stdout).Encode(r)
}

// serveControl is the environment's floor: a bare Go HTTPS server that
// reads each review and answers it allowed, with no validation. The same
// load against it and against the webhook tells the machine's share of a
// latency from the webhook's. Prints {"port":N}; ends when stdin closes.
func serveControl(addr, certFile, keyFile string) error {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	ln, err := tls.Listen("tcp", addr, &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"http/1.1"}})
	if err != nil {
		return err
	}
	handler := func(w http.ResponseWriter, r *http.Request) {
		var review struct {
			Request struct {
				UID string `json:"uid"`
			} `json:"request"`
		}
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": "admission.k8s.io/v1",
			"kind":       "AdmissionReview",
			// the warning tells a person (or bench:webhook) that the control answered
			"response": map[string]any{"uid": review.Request.UID, "allowed": true, "warnings": []string{"bench control"}},
		})
	}
	go func() {
		io.Copy(io.Discard, os.Stdin)
		ln.Close()
	}()
	fmt.Printf("{\"port\":%d}\n", ln.Addr().(*net.TCPAddr).Port)
	err = http.Serve(ln, http.HandlerFunc(handler))
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

type generator struct {
	base   string
	bodies []body
	client *http.Client
	proto  string
	mu     sync.Mutex
}

// send posts body i with the given uid; "" when the verdict is right.
func (g *generator) send(i int, uid string) string {
	b := g.bodies[i%len(g.bodies)]
	payload := strings.Replace(b.Template, "__UID__", uid, 1)
	res, err := g.client.Post(g.base+b.Path, "application/json", strings.NewReader(payload))
	if err != nil {
		return "transport: " + err.Error()
	}
	defer res.Body.Close()
	text, err := io.ReadAll(res.Body)
	if err != nil {
		return "read: " + err.Error()
	}
	g.mu.Lock()
	g.proto = res.Proto
	g.mu.Unlock()
	if res.StatusCode != http.StatusOK {
		return fmt.Sprintf("HTTP %d", res.StatusCode)
	}
	var review struct {
		Response struct {
			UID     string `json:"uid"`
			Allowed bool   `json:"allowed"`
		} `json:"response"`
	}
	if err := json.NewDecoder(bytes.NewReader(text)).Decode(&review); err != nil {
		return "not JSON: " + err.Error()
	}
	if review.Response.UID != uid {
		return "uid not echoed"
	}
	if review.Response.Allowed != b.Allowed {
		return "wrong verdict for " + b.Name
	}
	return ""
}

func (g *generator) openLoop(rate, seconds float64, prefix string) result {
	total := int(math.Round(rate * seconds))
	interval := time.Duration(float64(time.Second) / rate)
	latencies := make([]float64, total)
	service := make([]float64, total)
	errs := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var maxLag time.Duration
	start := time.Now().Add(20 * time.Millisecond)
	for i := 0; i < total; i++ {
		due := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(due))
		sent := time.Now()
		if lag := sent.Sub(due); lag > maxLag {
			maxLag = lag
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			msg := g.send(i, fmt.Sprintf("%s-%d", prefix, i))
			end := time.Now()
			latencies[i] = ms(end.Sub(due))
			service[i] = ms(end.Sub(sent))
			if msg != "" {
				mu.Lock()
				errs[msg]++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	sort.Float64s(latencies)
	sort.Float64s(service)
	return result{
		Protocol:     g.proto,
		Sent:         total,
		P50Ms:        percentile(latencies, 50),
		P99Ms:        percentile(latencies, 99),
		MaxMs:        percentile(latencies, 100),
		ServiceP99Ms: percentile(service, 99),
		MaxSendLagMs: ms(maxLag),
		Errors:       errs,
	}
}

func ms(d time.Duration) float64 {
	return math.Round(float64(d.Microseconds())/10) / 100
}

// percentile is the nearest-rank percentile p (0..100) of sorted values,
// as bench/open_loop.ts computes it.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}
