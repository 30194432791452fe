// Replaces lint/v2.go of github.com/grafana/dashboard-linter v0.2.0 when the Makefile builds
// .cache/bin/dashboard-linter (target $(DASHBOARD_LINTER)). Upstream's v2.go reads Grafana's
// v2 dashboard schema through github.com/grafana/grafana/apps/dashboard, a pseudo-version the
// Go module proxy does not serve; rebalance-monitor's dashboards use the classic schema, so
// the linter is built without v2 support: a v2 dashboard is reported as unsupported.
package lint

import (
	"encoding/json"
	"fmt"
	"strings"
)

// isV2APIVersion is upstream's: true for "dashboard.grafana.app/v2", "v2alpha1", "v2beta1"...
func isV2APIVersion(apiVersion string) bool {
	v := apiVersion
	if i := strings.LastIndex(v, "/"); i >= 0 {
		v = v[i+1:]
	}
	return strings.HasPrefix(v, "v2")
}

func newDashboardFromV2(_ json.RawMessage, apiVersion string) (Dashboard, error) {
	return Dashboard{}, fmt.Errorf("%s: the v2 dashboard schema is not supported by this build", apiVersion)
}
