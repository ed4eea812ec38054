//! What an `http_request` carries besides the request to its destination, for the permission
//! card: each is part of what the user approves, so a grant for the destination alone does not
//! cover a call that adds one (the spec's `http` class).

use serde_json::Value;

use super::body::BODY_ARGS;

/// One line per extra the call carries, in a fixed order, user values in backticks; empty when
/// the call is only a request to its destination. Pure: reads the arguments, touches nothing.
pub fn http_request_approval(args: &Value) -> Vec<String> {
    let text = |name: &str| args.get(name).and_then(Value::as_str);
    let mut extras = Vec::new();
    if let Some(path) = text("body_file") {
        extras.push(format!("sends the local file `{path}` as the body"));
    }
    if let Some(fields) = args.get("form_data").and_then(Value::as_object) {
        for (field, value) in fields {
            if let Some(path) = value.get("file").and_then(Value::as_str) {
                extras.push(format!(
                    "uploads the local file `{path}` as form field `{field}`"
                ));
            }
        }
    }
    if let Some(path) = text("output_file") {
        extras.push(format!("saves the response body to `{path}`"));
    }
    if let Some(proxy) = text("proxy") {
        extras.push(format!("goes through the proxy `{proxy}`"));
    }
    if args.get("verify_tls").and_then(Value::as_bool) == Some(false) {
        extras.push("does not verify the server's TLS certificate".to_owned());
    }
    if args.get("follow_redirects").and_then(Value::as_bool) == Some(true) {
        extras.push("follows redirects, to any host".to_owned());
    }
    let bodies = BODY_ARGS
        .iter()
        .filter(|name| args.get(**name).is_some_and(|value| !value.is_null()))
        .count();
    if bodies > 1 {
        // The call will be refused at execution; say so rather than approve a muddle.
        extras.push("gives more than one body and will be refused".to_owned());
    }
    extras
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_plain_request_carries_nothing() {
        let args = json!({"url": "https://api.example.org/x", "method": "POST", "json": {"a": 1}});
        assert_eq!(http_request_approval(&args), Vec::<String>::new());
    }

    #[test]
    fn every_extra_is_named() {
        let args = json!({
            "url": "https://api.example.org/x",
            "form_data": {"note": "hi", "upload": {"file": "data/reads.fq"}},
            "output_file": "out/answer.json",
            "proxy": "http://proxy.local:3128",
            "verify_tls": false,
            "follow_redirects": true
        });
        assert_eq!(
            http_request_approval(&args),
            vec![
                "uploads the local file `data/reads.fq` as form field `upload`",
                "saves the response body to `out/answer.json`",
                "goes through the proxy `http://proxy.local:3128`",
                "does not verify the server's TLS certificate",
                "follows redirects, to any host",
            ]
        );
        let args = json!({"url": "https://x.org", "body_file": "a.bin", "verify_tls": true});
        assert_eq!(
            http_request_approval(&args),
            vec!["sends the local file `a.bin` as the body"]
        );
    }
}
