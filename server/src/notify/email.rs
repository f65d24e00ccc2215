//! Email delivery over SMTP (POLICY.md §5), with lettre: a
//! `multipart/alternative` message (plain text and HTML with the same
//! content and links), STARTTLS when the target asks for it, and a 10 s
//! timeout. The notification id is the `Message-ID`, so a retried message
//! can be recognised as the same one.

use crate::config::SmtpConfig;
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use std::time::Duration;

/// One email target, ready to send.
#[derive(Clone)]
pub(crate) struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    to: Vec<Mailbox>,
}

impl Mailer {
    /// Builds the transport (no connection is made until a send).
    pub(crate) fn new(
        smtp: &SmtpConfig,
        to: &[String],
        timeout: Duration,
    ) -> Result<Mailer, String> {
        let builder = if smtp.starttls {
            AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&smtp.host)
                .map_err(|e| format!("smtp {}: {e}", smtp.host))?
        } else {
            AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&smtp.host)
        };
        let mut builder = builder.port(smtp.port).timeout(Some(timeout));
        if let (Some(user), Some(pass)) = (&smtp.username, &smtp.password) {
            builder =
                builder.credentials(Credentials::new(user.clone(), pass.expose().to_string()));
        }
        let from = smtp
            .from
            .parse()
            .map_err(|_| format!("{:?} is not an email address", smtp.from))?;
        let to = to
            .iter()
            .map(|t| {
                t.parse()
                    .map_err(|_| format!("{t:?} is not an email address"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Mailer {
            transport: builder.build(),
            from,
            to,
        })
    }

    /// Sends one message.
    pub(crate) async fn send(
        &self,
        id: &str,
        subject: &str,
        text: String,
        html: String,
    ) -> Result<(), String> {
        let mut b = Message::builder()
            .from(self.from.clone())
            .subject(subject)
            .message_id(Some(format!("<{id}@stop-and-go>")));
        for to in &self.to {
            b = b.to(to.clone());
        }
        let message = b
            .multipart(MultiPart::alternative_plain_html(text, html))
            .map_err(|e| format!("could not build the message: {e}"))?;
        self.transport.send(message).await.map(|_| ()).map_err(|e| {
            if e.is_permanent() {
                "the SMTP server refused the message".to_string()
            } else if e.is_transient() {
                "the SMTP server asked to try later".to_string()
            } else {
                "could not reach the SMTP server".to_string()
            }
        })
    }
}
