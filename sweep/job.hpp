// A sweep on the user's Kubernetes cluster (docs/sweep.md#kubernetes): a ConfigMap carrying the
// sweep file and every file its base scenario reads, an Indexed Job whose pod i runs
// `hetplan sweep --shard i/N` into its own folder on a shared volume, and a one-pod Job that
// merges the shards and draws the report. Nothing is applied: the front end writes the files.
#pragma once

#include <string>
#include <vector>

#include "sweep/sweep.hpp"

namespace hetplan::sweep {

struct JobOptions {
  std::size_t shards = 1;
  std::string image;                 // a container image with hetplan on its PATH
  std::string name;                  // the Job's name; empty: the sweep's
  std::string results_claim = "hetplan-sweep-results";  // a PersistentVolumeClaim, ReadWriteMany
  std::string namespace_name;        // empty: the namespace kubectl uses
  std::string scheduler;             // schedulerName (e.g. volcano); empty: the default
  int cpus = 1;                      // per pod: its CPU request and its --jobs
};

struct JobFile {
  std::string name;  // "configmap.yaml", "job.yaml", "merge-job.yaml"
  std::string text;
};

// The three manifests. Throws InputError for options Kubernetes would refuse (a name that is
// no DNS label, more shards than points) and for inputs over a ConfigMap's 1 MiB.
std::vector<JobFile> sweep_job(const Sweep& sweep, const JobOptions& options);

// Where each input lands under the ConfigMap's mount: the sweep file and the files its scenario
// reads, by their paths relative to the folder that holds them all.
struct JobInput {
  std::string key;   // the ConfigMap key ("f00-default.yaml")
  std::string path;  // under the mount ("scenarios/sweeps/x.yaml")
  std::string text;
};
std::vector<JobInput> job_inputs(const Sweep& sweep);

}  // namespace hetplan::sweep
