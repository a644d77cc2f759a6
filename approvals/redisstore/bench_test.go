package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/approvals"
	"github.com/plugkit-go/plugkit/internal/testkit/testredis"
)

// BenchmarkApproveElsewhere is the round trip of one approval: a call
// parked on one replica, approved on another, resumed on the first.
// BenchmarkApproveInProcess is the same without a store; compare the two
// of one run (go test -bench Approve).
func BenchmarkApproveElsewhere(b *testing.B) {
	srv := testredis.Start(b)
	stA, err := Open(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	stB, err := Open(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	a := approvals.NewShared(approvals.Events{}, stA, "replica-a", 30*time.Second)
	o := approvals.NewShared(approvals.Events{}, stB, "replica-b", 30*time.Second)
	defer func() { a.Close(); o.Close(); stA.Close(); stB.Close() }()
	benchApprove(b, a, o)
}

func BenchmarkApproveInProcess(b *testing.B) {
	s := approvals.New(approvals.Events{})
	benchApprove(b, s, s)
}

func benchApprove(b *testing.B, holder, answerer *approvals.Service) {
	route := oncall(1, time.Minute)
	for b.Loop() {
		pending := make(chan string, 1)
		done := make(chan approvals.Request, 1)
		go func() {
			r, _ := holder.Ask(context.Background(), route, approvals.Call{ID: "c", Tool: "files_delete", Arguments: `{"path":"a"}`, Principal: caller},
				func(r approvals.Request) { pending <- r.ID })
			done <- r
		}()
		if _, err := answerer.Decide(<-pending, ann, true, "", ""); err != nil {
			b.Fatal(err)
		}
		if r := <-done; r.State != approvals.Approved {
			b.Fatalf("ended %s", r.State)
		}
	}
}
