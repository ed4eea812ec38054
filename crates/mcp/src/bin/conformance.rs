//! `codaris-mcp-conformance URL`: the client under test for `@modelcontextprotocol/conformance`
//! (`conformance client --command …`, which appends the test server's URL). It connects through
//! `codaris_mcp` over streamable HTTP, as the daemon does, lists the tools, and calls the one
//! the scenario named in `MCP_CONFORMANCE_SCENARIO` expects: `add_numbers` for `tools_call`,
//! `test_reconnection` for `sse-retry`. It exits 1 when a step fails, saying which on stderr.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use codaris_mcp::{Connection, ServerName, ServerSpec};
use serde_json::{Map, Value, json};

const TIMEOUT: Duration = Duration::from_secs(20);

fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: codaris-mcp-conformance URL");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("no runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&url, &scenario)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{scenario}: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(url: &str, scenario: &str) -> Result<(), String> {
    let name = ServerName::parse("conformance").map_err(|err| err.to_string())?;
    let mut spec = ServerSpec::http(name, url);
    spec.startup_timeout = Some(TIMEOUT);
    let notified = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let connection = Connection::open(
        &spec,
        Arc::new(tokio::sync::Notify::new()),
        &codaris_mcp::Roots::default(),
        notified,
    )
    .await
    .map_err(|err| format!("connecting to {url}: {err}"))?;
    eprintln!(
        "connected: protocol {}, server {}",
        connection.protocol, connection.server_info
    );
    let outcome = exercise(&connection, scenario).await;
    connection.close().await;
    outcome
}

async fn exercise(connection: &Connection, scenario: &str) -> Result<(), String> {
    let tools = connection
        .list_tools(TIMEOUT)
        .await
        .map_err(|err| format!("tools/list: {err}"))?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    eprintln!("tools: {names:?}");
    let (tool, arguments) = match scenario {
        "tools_call" => ("add_numbers", json!({"a": 2, "b": 3})),
        "sse-retry" => ("test_reconnection", json!({})),
        _ => return Ok(()),
    };
    if !names.contains(&tool) {
        return Err(format!("the server offers no `{tool}`"));
    }
    let arguments = match arguments {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let result = connection
        .call(tool, arguments, TIMEOUT)
        .await
        .map_err(|err| format!("calling {tool}: {err}"))?;
    let rendered = codaris_mcp::render::result(&result);
    eprintln!("{tool}: {}", rendered.text);
    if rendered.is_error {
        return Err(format!("{tool} answered with an error: {}", rendered.text));
    }
    Ok(())
}
