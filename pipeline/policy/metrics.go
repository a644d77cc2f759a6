package policy

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// Metrics counts calls and their durations per tool and outcome, in memory.
// Load Plugin() to start counting; read with Snapshot.
type Metrics struct {
	mu   sync.Mutex
	rows map[metricKey]*MetricRow
}

type metricKey struct {
	tool string
	code pipeline.Code
}

// MetricRow is the tally of one tool and one outcome ("" is success).
type MetricRow struct {
	Tool  string
	Code  pipeline.Code
	Count int64
	Total time.Duration
	Max   time.Duration
}

// NewMetrics returns an empty tally.
func NewMetrics() *Metrics { return &Metrics{rows: map[metricKey]*MetricRow{}} }

// Plugin is the stage-3 wrapper that feeds the tally.
func (m *Metrics) Plugin() kernel.Plugin {
	return wrapper("metrics", func(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
		start := time.Now()
		r := next(ctx)
		m.record(e.Name(), r.Code(), time.Since(start))
		return r
	})
}

func (m *Metrics) record(tool string, code pipeline.Code, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := metricKey{tool, code}
	row, ok := m.rows[k]
	if !ok {
		row = &MetricRow{Tool: tool, Code: code}
		m.rows[k] = row
	}
	row.Count++
	row.Total += d
	row.Max = max(row.Max, d)
}

// Snapshot returns every row, by tool then code.
func (m *Metrics) Snapshot() []MetricRow {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]MetricRow, 0, len(m.rows))
	for _, r := range m.rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b MetricRow) int {
		if a.Tool != b.Tool {
			if a.Tool < b.Tool {
				return -1
			}
			return 1
		}
		if a.Code < b.Code {
			return -1
		}
		if a.Code > b.Code {
			return 1
		}
		return 0
	})
	return out
}
