//! What `.command.run` (the wrapper Nextflow's `BashWrapperBuilder` writes) shows about a
//! task: the metadata header (`### name: '…'`, `### container: '…'`), the scheduler
//! directives (`#SBATCH`, `#PBS`, `#BSUB`, `#$`), the container engine's options (`docker run
//! -i --cpu-shares 2048 --memory 6144m …`) and the inputs `nxf_stage` links in.

use serde::Serialize;

use super::units::{parse_duration, parse_memory};

/// The wrapper's facts; each `None` means the wrapper does not show it.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Wrapper {
    /// The task name (`### name:`, or `# NEXTFLOW TASK:` in older wrappers).
    pub name: Option<String>,
    pub container: Option<String>,
    /// The container engine, from the launch line (`docker`, `podman`, `singularity`, …).
    pub engine: Option<String>,
    pub cpus: Option<f64>,
    pub memory: Option<u64>,
    pub time_ms: Option<u64>,
    pub queue: Option<String>,
    /// The scheduler directive lines, as written.
    pub directives: Vec<String>,
    /// `ln -s TARGET NAME` lines of `nxf_stage`: (name, target).
    pub staged: Vec<(String, String)>,
}

const ENGINES: &[&str] = &[
    "docker",
    "podman",
    "singularity",
    "apptainer",
    "charliecloud",
    "sarus",
    "shifter",
];
const MAX_DIRECTIVES: usize = 32;
const MAX_STAGED: usize = 200;

pub fn parse_wrapper(text: &str) -> Wrapper {
    let mut w = Wrapper::default();
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("### name:") {
            w.name = w.name.or_else(|| Some(unquote(rest)));
        } else if let Some(rest) = t.strip_prefix("# NEXTFLOW TASK:") {
            w.name = w.name.or_else(|| Some(rest.trim().to_string()));
        } else if let Some(rest) = t.strip_prefix("### container:") {
            w.container = Some(unquote(rest));
        } else if let Some(rest) = directive(t) {
            if w.directives.len() < MAX_DIRECTIVES {
                w.directives.push(t.to_string());
            }
            scheduler(rest, &mut w);
        } else if let Some(rest) = t.strip_prefix("ln -s ") {
            let parts: Vec<&str> = rest.split_whitespace().collect();
            if let [target, name] = parts.as_slice()
                && w.staged.len() < MAX_STAGED
            {
                w.staged.push((unquote(name), unquote(target)));
            }
        } else if let Some(engine) = launch_engine(t) {
            w.engine = Some(engine.to_string());
            engine_options(t, &mut w);
        }
    }
    w
}

fn unquote(text: &str) -> String {
    let t = text.trim();
    t.strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .or_else(|| t.strip_prefix('"').and_then(|s| s.strip_suffix('"')))
        .unwrap_or(t)
        .to_string()
}

fn directive(line: &str) -> Option<&str> {
    ["#SBATCH", "#PBS", "#BSUB", "#$ "]
        .iter()
        .find_map(|p| line.strip_prefix(p))
        .map(str::trim)
}

/// The flags of a scheduler directive that name resources (SLURM, PBS, LSF, SGE as Nextflow
/// writes them).
fn scheduler(rest: &str, w: &mut Wrapper) {
    let words: Vec<&str> = rest.split_whitespace().collect();
    let (flag, value) = match words.as_slice() {
        [flag, value, ..] => (*flag, *value),
        [one] => match one.split_once('=') {
            Some((f, v)) => (f, v),
            None => return,
        },
        [] => return,
    };
    let value = unquote(value);
    match flag {
        "-c" | "--cpus-per-task" | "-n" => w.cpus = value.parse().ok().or(w.cpus),
        "--mem" | "-M" => w.memory = slurm_memory(&value).or(w.memory),
        "-t" | "--time" | "-W" => w.time_ms = parse_duration(&value).or(w.time_ms),
        "-p" | "--partition" | "-q" => w.queue = Some(value),
        "-l" => {
            // PBS/SGE resource lists: `nodes=1:ppn=2`, `mem=6gb`, `walltime=01:00:00`.
            for item in value.split([',', ':']) {
                match item.split_once('=') {
                    Some(("ppn" | "ncpus", n)) => w.cpus = n.parse().ok().or(w.cpus),
                    Some(("mem" | "h_vmem" | "virtual_free", m)) => {
                        w.memory = slurm_memory(m).or(w.memory)
                    }
                    Some(("walltime" | "h_rt", t)) => w.time_ms = parse_duration(t).or(w.time_ms),
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// `6144M`, `6gb`, `2048`: SLURM counts a bare number in megabytes.
fn slurm_memory(text: &str) -> Option<u64> {
    let t = text.trim().trim_end_matches(['b', 'B']);
    if let Ok(mb) = t.parse::<u64>() {
        return Some(mb.saturating_mul(1024 * 1024));
    }
    parse_memory(t)
}

fn launch_engine(line: &str) -> Option<&'static str> {
    let first = line.split_whitespace().find(|w| *w != "sudo")?;
    let engine = ENGINES.iter().find(|e| first == **e)?;
    let second = line.split_whitespace().skip_while(|w| *w != first).nth(1)?;
    matches!(second, "run" | "exec" | "--silent" | "-s" | "-q").then_some(*engine)
}

fn engine_options(line: &str, w: &mut Wrapper) {
    let words: Vec<&str> = line.split_whitespace().collect();
    for pair in words.windows(2) {
        let [flag, value] = pair else { continue };
        match *flag {
            "--cpus" => w.cpus = value.parse().ok().or(w.cpus),
            // Nextflow writes `--cpu-shares <cpus * 1024>` when CPU limits are off.
            "--cpu-shares" => w.cpus = value.parse::<f64>().ok().map(|s| s / 1024.0).or(w.cpus),
            "--memory" | "-m" => w.memory = slurm_memory(value).or(w.memory),
            _ => {}
        }
        if w.container.is_none() && *flag == "$NXF_BOXID" && !value.starts_with('-') {
            w.container = Some(unquote(value));
        }
    }
}
