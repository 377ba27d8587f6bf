package cluster

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/seatlock/seatlock/payment"
)

// Options say what Start starts. The zero value is not enough: Dir and
// APIBinary are needed.
type Options struct {
	Dir       string            // working files (Redis, Sentinels); Postgres makes its own
	APIBinary string            // the cmd/api binary (see BuildAPI)
	Instances int               // API instances; 0 means 3
	Env       map[string]string // more environment for every instance
	// ClockLibrary is the LD_PRELOAD library that lets a Redis server's wall
	// clock jump (see BuildClockLibrary); empty means clocks stay right.
	ClockLibrary string
	// SeeCharge, when set, is told every charge request the payment
	// provider receives (before it is served): the fences it carries.
	SeeCharge func(payment.ChargeRequest)
}

// Cluster is a running deployment. Each API instance reaches Postgres,
// the payment provider and each Redis server through a Link of its own,
// so that one instance can be cut off or slowed alone. (The Sentinels name
// the Redis servers by their own addresses; an instance dials its links
// instead, as REDIS_ADDR_MAP tells it. It asks the Sentinels directly.)
type Cluster struct {
	APIs       []*API
	Redis      *Redis
	Postgres   *Postgres
	Payments   *payment.Provider
	DBLinks    []*Link   // DBLinks[i]: APIs[i] -> Postgres
	PayLinks   []*Link   // PayLinks[i]: APIs[i] -> the payment provider
	RedisLinks [][]*Link // RedisLinks[i][s]: APIs[i] -> Redis.Servers[s]

	paySrv *http.Server
	served chan error
}

// Start starts every part and returns once every instance answers. On
// error it stops what it started.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Instances == 0 {
		o.Instances = 3
	}
	c := &Cluster{}
	if err := c.start(ctx, o); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, o Options) error {
	var err error
	if c.Redis, err = startRedis(o.Dir, o.ClockLibrary); err != nil {
		return err
	}
	if c.Postgres, err = StartPostgres(); err != nil {
		return err
	}
	payURL, err := c.startPayments(o.SeeCharge)
	if err != nil {
		return err
	}
	for i := range o.Instances {
		name := fmt.Sprintf("api-%d", i)
		db, err := NewLink(name+" -> postgres", loopback(c.Postgres.Port))
		if err != nil {
			return err
		}
		pay, err := NewLink(name+" -> payments", payURL)
		if err != nil {
			return err
		}
		c.DBLinks, c.PayLinks = append(c.DBLinks, db), append(c.PayLinks, pay)
		addrs, err := c.linkRedis(name)
		if err != nil {
			return err
		}
		env := map[string]string{
			"REDIS_URL":      c.Redis.URL(),
			"REDIS_ADDR_MAP": addrs,
			"DATABASE_URL":   fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", db.Listen),
			"PAYMENT_URL":    "http://" + pay.Listen,
		}
		for k, v := range o.Env {
			env[k] = v
		}
		a, err := newAPI(name, o.APIBinary, env)
		if err != nil {
			return err
		}
		c.APIs = append(c.APIs, a)
		if err := a.Start(ctx); err != nil {
			return err
		}
	}
	return nil
}

// linkRedis adds the links of the next instance, named name, to every
// Redis server, and returns the instance's REDIS_ADDR_MAP: each server's
// address mapped to its link's.
func (c *Cluster) linkRedis(name string) (string, error) {
	c.RedisLinks = append(c.RedisLinks, nil)
	i := len(c.RedisLinks) - 1
	var addrs []string
	for s, srv := range c.Redis.Servers {
		l, err := NewLink(fmt.Sprintf("%s -> redis-%d", name, s), srv.Addr())
		if err != nil {
			return "", err
		}
		c.RedisLinks[i] = append(c.RedisLinks[i], l)
		addrs = append(addrs, srv.Addr()+"="+l.Listen)
	}
	return strings.Join(addrs, ","), nil
}

// startPayments serves an in-memory payment provider on a free loopback
// port and returns its host:port.
func (c *Cluster) startPayments(see func(payment.ChargeRequest)) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("cluster: payments: %w", err)
	}
	c.Payments = payment.NewProvider(payment.ProviderOptions{})
	h := c.Payments.Handler()
	if see != nil {
		h = seeCharges(h, see)
	}
	c.paySrv = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	c.served = make(chan error, 1)
	// Owned by the cluster: Stop shuts the server down and waits.
	go func() { c.served <- c.paySrv.Serve(ln) }()
	return ln.Addr().String(), nil
}

// Stop kills every instance and server and waits for them. A paused
// instance is killed too.
func (c *Cluster) Stop() {
	for _, a := range c.APIs {
		if a.proc != nil {
			_ = a.Kill()
		}
	}
	for _, l := range slices.Concat(append(c.RedisLinks, c.DBLinks, c.PayLinks)...) {
		l.Close()
	}
	if c.paySrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = c.paySrv.Shutdown(ctx)
		cancel()
		<-c.served
	}
	if c.Redis != nil {
		c.Redis.stop()
	}
	if c.Postgres != nil {
		_ = c.Postgres.Remove()
	}
}

// BuildAPI builds cmd/api of the module the working directory is in into
// dir and returns the binary's path. It is built without -race: it is the
// system under test, run as a deployment runs it.
func BuildAPI(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "api")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/seatlock/seatlock/cmd/api").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("cluster: go build cmd/api (run from within the seatlock module): %w\n%s", err, out)
	}
	return bin, nil
}

//go:embed fastclock/fastclock.c
var fastclockC []byte

// ErrNoCompiler is returned by BuildClockLibrary when there is no C
// compiler (apt-get install gcc).
var ErrNoCompiler = errors.New("cluster: no C compiler (cc) to build the clock library")

// BuildClockLibrary compiles fastclock.c (an LD_PRELOAD library whose
// wall clock jumps by the seconds written in FASTCLOCK_JUMP_FILE) into dir
// and returns its path.
func BuildClockLibrary(dir string) (string, error) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return "", ErrNoCompiler
	}
	src, lib := filepath.Join(dir, "fastclock.c"), filepath.Join(dir, "fastclock.so")
	if err := os.WriteFile(src, fastclockC, 0o644); err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", lib, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("cluster: build the clock library: %w\n%s", err, out)
	}
	return lib, nil
}

// seeCharges calls see with the body of every POST /v1/charges before h
// serves it.
func seeCharges(h http.Handler, see func(payment.ChargeRequest)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/charges" {
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err == nil {
				var req payment.ChargeRequest
				if json.Unmarshal(body, &req) == nil {
					see(req)
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	})
}
