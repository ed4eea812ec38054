//! The executor's own id of each task's job (a Slurm, PBS, SGE or LSF job id), as Nextflow
//! logs it when it submits the task: `[SLURM] submitted process NAME > jobId: 4242; workDir:
//! /scratch/work/ab/cdef12…` (GridTaskHandler, at debug level, which `.nextflow.log` keeps).
//! A task's trace row has the same id in `native_id` once the task ends; while it waits in the
//! queue or runs, only the log has it.

use std::collections::HashMap;

/// Job ids by the task's short hash (`ab/cdef12`), from the log lines that name both.
pub fn job_ids(log: &str) -> HashMap<String, String> {
    let mut ids = HashMap::new();
    for line in log.lines() {
        let Some((_, rest)) = line.split_once("> jobId: ") else {
            continue;
        };
        let Some((id, dir)) = rest.split_once("; workDir: ") else {
            continue;
        };
        let id = id.trim();
        if id.is_empty()
            || id.len() > 64
            || !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '[' | ']'))
        {
            continue;
        }
        if let Some(hash) = short_hash(dir.trim()) {
            ids.insert(hash, id.to_owned());
        }
    }
    ids
}

/// `ab/cdef12` from a task directory `…/ab/cdef1234…` (a path or a URL).
pub fn short_hash(dir: &str) -> Option<String> {
    let mut parts = dir.trim_end_matches('/').rsplit('/');
    let name = parts.next()?;
    let prefix = parts.next()?;
    let hex = |s: &str| s.bytes().all(|b| b.is_ascii_hexdigit());
    (prefix.len() == 2 && name.len() >= 6 && hex(prefix) && hex(name))
        .then(|| format!("{prefix}/{}", &name[..6]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_submissions_give_each_task_s_job_id() {
        let log = "\
Dec-07 01:02:03.456 [Task submitter] DEBUG nextflow.executor.GridTaskHandler - [SLURM] submitted process NFCORE_DEMO:FASTQC (s1) > jobId: 4242; workDir: /scratch/w/3f/a1b2c3d4e5f6a7b8\n\
Dec-07 01:02:04.000 [Task submitter] INFO  nextflow.Session - [7c/0d9e8f] Submitted process > NFCORE_DEMO:MULTIQC\n\
Dec-07 01:02:05.000 [Task submitter] DEBUG nextflow.executor.GridTaskHandler - [SLURM] submitted process X > jobId: 4243; workDir: /scratch/w/7c/0d9e8f0011/\n\
junk > jobId: ; workDir: /w/aa/bbbbbb\n\
bad > jobId: 1;rm -rf; workDir: /w/aa/cccccc\n";
        let ids = job_ids(log);
        assert_eq!(ids.len(), 2, "{ids:?}");
        assert_eq!(ids.get("3f/a1b2c3").map(String::as_str), Some("4242"));
        assert_eq!(ids.get("7c/0d9e8f").map(String::as_str), Some("4243"));
    }
}
