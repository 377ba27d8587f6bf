package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterName is the name the Sentinels monitor the primary by.
const MasterName = "seatlock"

// Redis is a primary with one replica, watched by three Sentinels (a
// quorum of two), the way a small production Redis fails over.
type Redis struct {
	Servers   [2]*RedisServer // the first starts as the primary
	sentinels []*process
	ports     []int // the Sentinels'
}

// startRedis starts the primary, the replica and the Sentinels under dir,
// and returns once the Sentinels know the replica.
func startRedis(dir, clockLib string) (*Redis, error) {
	r := &Redis{}
	primary, err := newRedisServer(filepath.Join(dir, "redis-0"), clockLib)
	if err != nil {
		return r, err
	}
	r.Servers[0] = primary
	replica, err := newRedisServer(filepath.Join(dir, "redis-1"), clockLib,
		"--replicaof", "127.0.0.1", strconv.Itoa(primary.Port))
	if err != nil {
		return r, err
	}
	r.Servers[1] = replica
	for i := range 3 {
		if err := r.startSentinel(filepath.Join(dir, fmt.Sprintf("sentinel-%d.conf", i)), primary.Port); err != nil {
			return r, err
		}
	}
	return r, poll(30*time.Second, "the Sentinels know the replica", func() bool {
		return r.knowReplica()
	})
}

// startSentinel writes a Sentinel's configuration (it rewrites the file,
// so each has its own) and starts it.
func (r *Redis) startSentinel(conf string, primaryPort int) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	text := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2\n"+
		"sentinel down-after-milliseconds %[1]s 1000\n"+
		"sentinel failover-timeout %[1]s 5000\n"+
		"sentinel parallel-syncs %[1]s 1\n", MasterName, primaryPort)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	cmd := exec.Command("redis-server", conf, "--sentinel", "--port", strconv.Itoa(port), "--bind", "127.0.0.1")
	p, err := startProcess("redis-sentinel :"+strconv.Itoa(port), cmd)
	if err != nil {
		return err
	}
	r.sentinels = append(r.sentinels, p)
	r.ports = append(r.ports, port)
	return waitPing(loopback(port), p)
}

// URL is the REDIS_URL of the API instances: the Sentinels, and the name
// of the primary they watch.
func (r *Redis) URL() string {
	extra := ""
	for _, p := range r.ports[1:] {
		extra += "&addr=" + loopback(p)
	}
	return fmt.Sprintf("redis+sentinel://%s/0?master_name=%s%s", loopback(r.ports[0]), MasterName, extra)
}

// sentinel returns a client of the first Sentinel that answers.
func (r *Redis) sentinel() *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: loopback(r.ports[0]), MaxRetries: -1})
}

func (r *Redis) knowReplica() bool {
	s := r.sentinel()
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	replicas, err := s.Replicas(ctx, MasterName).Result()
	return err == nil && len(replicas) == 1 && !strings.Contains(fmt.Sprint(replicas), "s_down")
}

// Primary returns the server the Sentinels name as the primary, or nil
// when they name none of ours or do not answer.
func (r *Redis) Primary() *RedisServer {
	s := r.sentinel()
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	addr, err := s.GetMasterAddrByName(ctx, MasterName).Result()
	if err != nil || len(addr) != 2 {
		return nil
	}
	for _, srv := range r.Servers {
		if strconv.Itoa(srv.Port) == addr[1] {
			return srv
		}
	}
	return nil
}

// Failover kills the primary and waits until the Sentinels promote the
// replica; the old primary then comes back, empty, and the Sentinels make
// it the new primary's replica. It returns the server it killed.
func (r *Redis) Failover() (*RedisServer, error) {
	old := r.Primary()
	if old == nil {
		return nil, fmt.Errorf("cluster: the Sentinels name no primary")
	}
	if err := old.Kill(); err != nil {
		return old, err
	}
	err := poll(60*time.Second, "a Sentinel promotes the replica", func() bool {
		p := r.Primary()
		return p != nil && p != old
	})
	if err != nil {
		_ = old.start()
		return old, err
	}
	if err := old.start(); err != nil {
		return old, err
	}
	return old, poll(30*time.Second, "the old primary rejoins as a replica", r.knowReplica)
}

// stop kills every Redis process.
func (r *Redis) stop() {
	for _, s := range r.sentinels {
		_ = s.kill()
	}
	for _, srv := range r.Servers {
		if srv != nil {
			_ = srv.proc.kill()
		}
	}
}
