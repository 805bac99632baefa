package gitnotes

import (
	"context"
	"fmt"

	"github.com/intentfs/intentfs/internal/gitexec"
	"github.com/intentfs/intentfs/ledger"
)

// changesNoFile lists the events a trailing checkpoint may carry along to
// HEAD's note: none of them writes a path a commit could hold, so no
// commit's note would claim them by content.
var changesNoFile = map[ledger.Event]bool{
	ledger.EventCheckpoint: true, ledger.EventDenied: true, ledger.EventSelect: true,
	ledger.EventTransition: true, ledger.EventScope: true, ledger.EventLesson: true,
	ledger.EventApproval: true, ledger.EventSessionStart: true, ledger.EventSessionEnd: true,
	ledger.EventLedgerFailed: true, ledger.EventLedgerRecovered: true, ledger.EventTorn: true,
	ledger.EventHeader: true,
}

// attachTrailingCheckpoints extends a plan with the checkpoints that
// follow what it attaches. Records that change no committed path ride
// with the next commit, so a checkpoint written after the last commit
// (the mount writes one with every notes sync, to sign what that sync
// attaches) would wait for a commit that may never come, and the records
// it signs would reach the notes unsigned. The records after the last
// attached one, up to the last checkpoint among them, go to HEAD's note
// when none of them changes a file: the notes then still hold a prefix of
// the chain, now ending in a signature.
func attachTrailingCheckpoints(ctx context.Context, repo *gitexec.Repo, pending []pendingLine, plan []attachment, attached int) ([]attachment, int, error) {
	last := -1
	for i := attached; i < len(pending); i++ {
		e := pending[i].rec.Gov().Event
		if !changesNoFile[e] {
			break
		}
		if e == ledger.EventCheckpoint {
			last = i
		}
	}
	if last < 0 {
		return plan, attached, nil
	}
	head, err := repo.Line(ctx, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil || !gitexec.ValidOID(head) {
		return nil, 0, fmt.Errorf("reading HEAD for the checkpoint's note: %w", err)
	}
	return append(plan, attachment{commit: head, start: attached, end: last + 1}), last + 1, nil
}
