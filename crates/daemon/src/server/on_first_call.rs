//! A gRPC service made on its first request instead of at start.
//!
//! Server reflection decodes the whole descriptor set and indexes every symbol when it is
//! built: an eighth of a daemon's start and memory it keeps, for a service only tools like
//! `grpcurl` ever call. Served through [`OnFirstCall`], it costs nothing until then.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::server::NamedService;
use tower::Service;

/// Makes the service; an error is answered to each request as `internal`.
type Make<S> = fn() -> Result<S, String>;

/// `S`, made by `make` when the first request arrives and shared by every later one.
pub struct OnFirstCall<S> {
    made: Arc<OnceLock<Result<S, String>>>,
    make: Make<S>,
}

impl<S> OnFirstCall<S> {
    pub fn new(make: Make<S>) -> Self {
        Self {
            made: Arc::new(OnceLock::new()),
            make,
        }
    }

    /// Whether the first request has come (for the test that start makes nothing).
    pub fn is_made(&self) -> bool {
        self.made.get().is_some()
    }
}

impl<S> std::fmt::Debug for OnFirstCall<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnFirstCall")
            .field("made", &self.is_made())
            .finish_non_exhaustive()
    }
}

impl<S> Clone for OnFirstCall<S> {
    fn clone(&self) -> Self {
        Self {
            made: self.made.clone(),
            make: self.make,
        }
    }
}

impl<S: NamedService> NamedService for OnFirstCall<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> Service<http::Request<Body>> for OnFirstCall<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible> + Clone,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    // Boxed: reflection is asked rarely, and one allocation a request is nothing beside it.
    type Future = Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send>>;

    /// Always ready, as tonic's generated servers are (the made service is asked in `call`).
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        match self.made.get_or_init(self.make) {
            // A clone per request, as tonic's router does with every service: the made
            // service's state is shared behind its own `Arc`s.
            Ok(service) => Box::pin(service.clone().call(request)),
            Err(why) => {
                let status = tonic::Status::internal(why.clone());
                Box::pin(std::future::ready(Ok(status.into_http())))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    static MADE: AtomicUsize = AtomicUsize::new(0);

    /// Answers every request with status 200 and counts how often it was made.
    #[derive(Clone)]
    struct Answers;

    impl Service<http::Request<Body>> for Answers {
        type Response = http::Response<Body>;
        type Error = Infallible;
        type Future = std::future::Ready<Result<http::Response<Body>, Infallible>>;

        fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _request: http::Request<Body>) -> Self::Future {
            std::future::ready(Ok(http::Response::new(Body::empty())))
        }
    }

    fn request() -> http::Request<Body> {
        http::Request::new(Body::empty())
    }

    #[tokio::test]
    async fn made_once_on_the_first_request_and_shared_by_every_clone() {
        let service = OnFirstCall::new(|| {
            MADE.fetch_add(1, Ordering::SeqCst);
            Ok(Answers)
        });
        let mut clone = service.clone();
        assert!(!service.is_made(), "nothing is made before a request");
        assert_eq!(MADE.load(Ordering::SeqCst), 0);
        for _ in 0..3 {
            let response = clone.call(request()).await.unwrap();
            assert_eq!(response.status(), http::StatusCode::OK);
        }
        let response = service.clone().call(request()).await.unwrap();
        assert_eq!(response.status(), http::StatusCode::OK);
        assert!(service.is_made());
        assert_eq!(MADE.load(Ordering::SeqCst), 1, "made once for every clone");
    }

    #[tokio::test]
    async fn a_service_that_cannot_be_made_answers_internal_each_time() {
        let mut service: OnFirstCall<Answers> =
            OnFirstCall::new(|| Err("the descriptors do not decode".to_owned()));
        for _ in 0..2 {
            let response = service.call(request()).await.unwrap();
            let status = tonic::Status::from_header_map(response.headers()).unwrap();
            assert_eq!(status.code(), tonic::Code::Internal);
            assert_eq!(status.message(), "the descriptors do not decode");
        }
    }
}
