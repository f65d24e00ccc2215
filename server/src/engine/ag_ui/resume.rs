//! A resume entry as the engine's decision or answer. Pure, so every shape
//! a client may send is checked before anything is decided.

use super::run::ResumeEntry;
use crate::engine::Answer;
use crate::engine::DecisionRequest;
use crate::engine::error::EngineError;
use serde_json::Value;

/// The reason a cancelled approval interrupt rejects with.
pub(crate) const CANCELLED: &str = "cancelled in the AG-UI client";

/// The decision a resume entry for an approval carries: `status:
/// "cancelled"` rejects; `resolved` needs `payload.approved`, with an
/// optional `reason` and, where the approval may be edited, `editedArgs`.
pub(crate) fn decision_of(r: &ResumeEntry, editable: bool) -> Result<DecisionRequest, EngineError> {
    let reject = |reason: String| DecisionRequest {
        approve: false,
        reason: Some(reason),
        arguments: None,
        grant: None,
        upstream_receipt: None,
    };
    if r.cancelled {
        return Ok(reject(CANCELLED.to_string()));
    }
    let id = &r.interrupt_id;
    let p = r.payload.as_ref().and_then(Value::as_object).ok_or_else(|| {
        EngineError::Invalid(format!(
            "resume {id}: a resolved approval's payload is {{\"approved\": true|false, \"reason\"?: string, \"editedArgs\"?: object}}"
        ))
    })?;
    let approved = p.get("approved").and_then(Value::as_bool).ok_or_else(|| {
        EngineError::Invalid(format!(
            "resume {id}: payload.approved must be true or false"
        ))
    })?;
    let reason = match p.get("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
        Some(_) => {
            return Err(EngineError::Invalid(format!(
                "resume {id}: payload.reason must be a string"
            )));
        }
    };
    let arguments = match p.get("editedArgs") {
        None | Some(Value::Null) => None,
        Some(_) if !approved => {
            return Err(EngineError::Invalid(format!(
                "resume {id}: editedArgs go with approved: true"
            )));
        }
        Some(_) if !editable => {
            return Err(EngineError::Invalid(format!(
                "resume {id}: this approval's arguments may not be edited (its responseSchema has no editedArgs)"
            )));
        }
        Some(v) => Some(v.clone()),
    };
    if !approved {
        return Ok(reject(
            reason.unwrap_or_else(|| "rejected in the AG-UI client".into()),
        ));
    }
    Ok(DecisionRequest {
        approve: true,
        reason,
        arguments,
        grant: None,
        upstream_receipt: None,
    })
}

/// The answer a resume entry for a question carries: `cancelled` cancels;
/// `resolved` accepts with the payload as the form's content (an object),
/// or with none for a URL question.
pub(crate) fn answer_of(r: &ResumeEntry) -> Result<Answer, EngineError> {
    if r.cancelled {
        return Ok(Answer {
            action: "cancel".into(),
            content: None,
        });
    }
    let content = match &r.payload {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m.clone()),
        Some(_) => {
            return Err(EngineError::Invalid(format!(
                "resume {}: a question's payload is an object with its fields",
                r.interrupt_id
            )));
        }
    };
    Ok(Answer {
        action: "accept".into(),
        content,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(payload: Value) -> ResumeEntry {
        ResumeEntry {
            interrupt_id: "u-1".into(),
            cancelled: false,
            payload: Some(payload),
        }
    }

    #[test]
    fn an_approval_resume_becomes_a_decision() {
        let d = decision_of(&entry(json!({"approved": true})), false).unwrap();
        assert!(d.approve && d.reason.is_none() && d.arguments.is_none());
        let d = decision_of(&entry(json!({"approved": false, "reason": " no "})), false).unwrap();
        assert!(!d.approve);
        assert_eq!(d.reason.as_deref(), Some("no"));
        let cancelled = ResumeEntry {
            cancelled: true,
            payload: None,
            ..entry(Value::Null)
        };
        let d = decision_of(&cancelled, false).unwrap();
        assert!(!d.approve);
        assert_eq!(d.reason.as_deref(), Some(CANCELLED));
        let edit = json!({"approved": true, "editedArgs": {"name": "x", "value": 1}});
        assert_eq!(
            decision_of(&entry(edit.clone()), true).unwrap().arguments,
            Some(json!({"name": "x", "value": 1}))
        );
        for bad in [
            json!({}),
            json!({"approved": "yes"}),
            json!("approve"),
            json!({"approved": true, "reason": 5}),
            json!({"approved": false, "editedArgs": {}}),
        ] {
            assert!(decision_of(&entry(bad.clone()), true).is_err(), "{bad}");
        }
        assert!(decision_of(&entry(edit), false).is_err(), "not editable");
    }

    #[test]
    fn a_question_resume_becomes_an_answer() {
        let a = answer_of(&entry(json!({"color": "red"}))).unwrap();
        assert_eq!(a.action, "accept");
        assert_eq!(a.content.unwrap()["color"], "red");
        let cancelled = ResumeEntry {
            cancelled: true,
            ..entry(Value::Null)
        };
        assert_eq!(answer_of(&cancelled).unwrap().action, "cancel");
        assert!(answer_of(&entry(json!([1]))).is_err());
    }
}
