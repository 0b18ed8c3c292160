"""What a Prometheus server beside the control plane is told: a job per cluster with its own
token, CA and file_sd targets; each target the API server's pod proxy path of one pod port."""

from __future__ import annotations

from pathlib import PurePosixPath

from workload_svc.domain.prometheus import ScrapeTarget, config, target_groups

HOME = PurePosixPath("/srv/prom")


def test_one_job_per_cluster_reading_its_own_files() -> None:
    made = config(HOME, ["b", "a", "b"])
    jobs = made["scrape_configs"]
    assert [j["job_name"] for j in jobs] == ["cluster-a", "cluster-b"]
    assert jobs[0]["authorization"] == {
        "type": "Bearer",
        "credentials_file": "/srv/prom/auth/a.token",
    }
    assert jobs[0]["tls_config"] == {"ca_file": "/srv/prom/auth/a.crt"}
    assert jobs[0]["file_sd_configs"][0]["files"] == ["/srv/prom/targets/a.json"]
    assert config(HOME, [])["scrape_configs"] == []


def test_targets_are_the_pod_proxy_of_each_port_with_the_series_labels() -> None:
    groups = target_groups(
        "demo",
        "https://127.0.0.1:6443/prefix/",
        [
            ScrapeTarget("dcgm-exporter", "hyperpod-observability", "dcgm-x1", 9400, "node-1:9400"),
            ScrapeTarget(
                "model-server", "team a", "ep-0", 8000, "ep-0:8000", (("endpoint", "ep"),)
            ),
        ],
    )
    assert groups[0] == {
        "targets": ["127.0.0.1:6443"],
        "labels": {
            "__metrics_path__": "/prefix/api/v1/namespaces/hyperpod-observability/pods/dcgm-x1:9400/proxy/metrics",
            "__scheme__": "https",
            "cluster": "demo",
            "job": "dcgm-exporter",
            "instance": "node-1:9400",
        },
    }
    assert groups[1]["labels"]["endpoint"] == "ep"
    assert groups[1]["labels"]["__metrics_path__"].startswith("/prefix/api/v1/namespaces/team%20a/")
