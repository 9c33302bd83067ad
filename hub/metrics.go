package hub

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbridge/agentbridge"
)

// metrics are the hub's Prometheus instruments. They always exist, so the
// hub never checks; they are registered only when Options.Registry is set.
type metrics struct {
	records    *prometheus.CounterVec
	clients    prometheus.Gauge
	cutoffs    prometheus.Counter
	rejections *prometheus.CounterVec
	hooks      *prometheus.CounterVec
	drift      *prometheus.CounterVec
	reg        prometheus.Registerer // nil: nothing registered
}

func newMetrics(h *Hub, reg prometheus.Registerer) *metrics {
	m := &metrics{
		records: counterVec("agentbridge_records_published_total",
			"Stream records published, by event name.",
			"event"),
		clients: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "agentbridge_stream_clients",
			Help: "Stream clients connected.",
		}),
		cutoffs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agentbridge_stream_clients_cut_off_total",
			Help: "Stream clients cut off because they did not keep up.",
		}),
		rejections: counterVec("agentbridge_publish_rejections_total",
			"Publish calls rejected by validation, by source.",
			"source"),
		hooks: counterVec("agentbridge_hooks_total",
			"Hook payloads taken, by source and result: folded (changed the session), unchanged (a duplicate, a late hook, a binding), held (for a session not reported yet), refused.",
			"source", "result"),
		drift: counterVec("agentbridge_format_drift_total",
			"format-drift diagnostics raised, by source: an agent's journal stopped making sense (unknown record kinds, a session with records but no recognised turn).",
			"source"),
	}
	if reg == nil {
		return m
	}
	m.reg = reg
	for _, c := range []prometheus.Collector{m.records, m.clients, m.cutoffs, m.rejections, m.hooks, m.drift, sessionsCollector{h}} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				h.log.Warn("register hub metrics", "err", err)
			}
		}
	}
	return m
}

// counterVec returns a counter named name, with help and the label names
// labels.
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// source registers a source's own instruments: a Source that is also a
// prometheus.Collector (its counters, e.g. the queries a database source
// ran) is exposed with the hub's.
func (m *metrics) source(h *Hub, src Source) {
	c, ok := src.(prometheus.Collector)
	if !ok || m.reg == nil {
		return
	}
	if err := m.reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			h.log.Warn("register source metrics", "source", src.Info().ID, "err", err)
		}
	}
}

func (m *metrics) published(name string)      { m.records.WithLabelValues(name).Inc() }
func (m *metrics) rejected(source string)     { m.rejections.WithLabelValues(source).Inc() }
func (m *metrics) hook(source, result string) { m.hooks.WithLabelValues(source, result).Inc() }
func (m *metrics) drifted(source string)      { m.drift.WithLabelValues(source).Inc() }

var sessionsDesc = prometheus.NewDesc("agentbridge_sessions",
	"Sessions known to the hub, by source and status.", []string{"source", "status"}, nil)

// sessionsCollector counts sessions at scrape time.
type sessionsCollector struct{ h *Hub }

func (c sessionsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- sessionsDesc }

func (c sessionsCollector) Collect(ch chan<- prometheus.Metric) {
	type key struct {
		source string
		status agentbridge.Status
	}
	counts := map[key]int{}
	c.h.mu.Lock()
	order := append([]string(nil), c.h.order...)
	for _, id := range order {
		for _, ss := range c.h.sources[id].sessions {
			counts[key{id, ss.snap.Status}]++
		}
	}
	c.h.mu.Unlock()
	for _, id := range order {
		for _, st := range agentbridge.Statuses {
			ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(counts[key{id, st}]), id, string(st))
		}
	}
}
