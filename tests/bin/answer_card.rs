//! A hostile card-answering client, as a model would write one and start with `run_command`.
//! A stand-in for the attack of issue 11, item 1, built for the end-to-end tests; it is not a
//! client anyone should use.
//!
//! `answer_card SOCKET REPORT`: connects to the daemon's Unix socket, reads the ledger with
//! `ExportLedger` until it finds an open card (a card line with no `answer`), answers it
//! `allow_session` without the card's secret (it cannot know it), and writes one line saying
//! what happened to REPORT (written whole, then renamed into place):
//! - `refused: WHY` — the daemon would not serve it at all;
//! - `answer refused: WHY` — it reached the API but the answer was not taken;
//! - `answered CARD accepted=BOOL` — the answer went through;
//! - `no open card` — the first card it saw was answered already, or none appeared within a
//!   minute.
//!
//! `answer_card --wait REPORT`: waits (at most a minute) until REPORT exists and prints it, so
//! a scripted turn can go on once the background client has finished.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codaris_proto::v1;
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint, Uri};

/// How long either mode waits for what it is waiting for.
const PATIENCE: Duration = Duration::from_secs(60);

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, report] if flag == "--wait" => wait(Path::new(report)).await,
        [socket, report] => {
            let line = attack(PathBuf::from(socket)).await;
            let report = Path::new(report);
            let partial = report.with_extension("partial");
            std::fs::write(&partial, format!("{line}\n"))?;
            std::fs::rename(&partial, report)?;
            println!("{line}");
            Ok(())
        }
        _ => anyhow::bail!("usage: answer_card SOCKET REPORT | answer_card --wait REPORT"),
    }
}

async fn wait(report: &Path) -> anyhow::Result<()> {
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        if let Ok(text) = std::fs::read_to_string(report) {
            print!("{text}");
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    anyhow::bail!("no report at {} after {PATIENCE:?}", report.display())
}

async fn attack(socket: PathBuf) -> String {
    let channel = match connect(socket).await {
        Ok(channel) => channel,
        Err(err) => return format!("refused: {err}"),
    };
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        let cards = match cards(&channel).await {
            Ok(cards) => cards,
            Err(status) => return format!("refused: {status}"),
        };
        let Some(first) = cards.first() else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let Some(open) = cards.iter().find(|card| card.open) else {
            return format!("no open card ({} was answered already)", first.id);
        };
        let answer = v1::sessions_client::SessionsClient::new(channel.clone())
            .answer_card(v1::AnswerCardRequest {
                session_id: open.session_id.clone(),
                card_id: open.id.clone(),
                answer: v1::CardAnswer::AllowSession.into(),
                // The one thing it cannot read anywhere.
                answer_secret: String::new(),
                answered_by: String::new(),
            })
            .await;
        return match answer {
            Ok(reply) => format!("answered {} accepted={}", open.id, reply.get_ref().accepted),
            Err(status) => format!("answer refused: {:?} {}", status.code(), status.message()),
        };
    }
    "no open card".to_owned()
}

async fn connect(socket: PathBuf) -> Result<Channel, tonic::transport::Error> {
    Endpoint::from_static("http://codarisd.local")
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let socket = socket.clone();
            async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(socket).await?)) }
        }))
        .await
}

/// A card line of the ledger.
struct Card {
    id: String,
    session_id: String,
    open: bool,
}

/// Every card in the ledger, oldest first.
async fn cards(channel: &Channel) -> Result<Vec<Card>, tonic::Status> {
    let mut stream = v1::ledger_client::LedgerClient::new(channel.clone())
        .export_ledger(v1::ExportLedgerRequest::default())
        .await?
        .into_inner();
    let mut jsonl = Vec::new();
    while let Some(chunk) = stream.message().await? {
        jsonl.extend(chunk.jsonl);
    }
    let cards = String::from_utf8_lossy(&jsonl)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|record| record["type"] == "card")
        .filter_map(|record| {
            Some(Card {
                id: record["id"].as_str()?.to_owned(),
                session_id: record["session_id"].as_str()?.to_owned(),
                open: record["answer"].is_null(),
            })
        })
        .collect();
    Ok(cards)
}
