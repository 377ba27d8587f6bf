package write_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seatlock/seatlock/internal/testenv"
)

// TestSkeletonsFailTheGrader grades the attendee's skeletons as they are
// in the repository, with GRADE=1 as the labs' pages say: each must
// compile, fail its first stage with the stage's message, and do it
// cleanly (no panic, no hang until the timeout). The solutions pass the
// same grader in their own tests.
func TestSkeletonsFailTheGrader(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to grade the skeletons with")
	}
	redisURL := testenv.RedisURL(t)       // the Redis lock's grader needs one
	postgresURL := testenv.PostgresURL(t) // and the Postgres lock's
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	skeletons := []string{"keyedlock", "redislock", "pglock"}
	args := []string{"test", "-count=1", "-timeout", "60s"}
	for _, s := range skeletons {
		args = append(args, "./docs/workshop/write/"+s)
	}
	cmd := exec.CommandContext(t.Context(), goBin, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GRADE=1", "TEST_REDIS_URL="+redisURL, "TEST_DATABASE_URL="+postgresURL)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the skeletons passed the grader:\n%s", out)
	}
	text := string(out)
	for _, bad := range []string{"panic:", "test timed out", "[build failed]", "[setup failed]"} {
		if strings.Contains(text, bad) {
			t.Fatalf("the grader did not fail the skeletons cleanly (%q):\n%s", bad, text)
		}
	}
	for _, s := range skeletons {
		if !strings.Contains(text, "FAIL\tgithub.com/seatlock/seatlock/docs/workshop/write/"+s+"\t") {
			t.Errorf("the skeleton %s did not fail the grader:\n%s", s, text)
		}
	}
	if n := strings.Count(text, "stage 1 of 3 ("); n != len(skeletons) {
		t.Errorf("%d of %d skeletons stopped at stage 1 with its message:\n%s", n, len(skeletons), text)
	}
}
