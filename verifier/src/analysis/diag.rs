//! Diagnostics: building one at an instruction (its function, source line, the registers
//! involved with map names, the last branch decisions) and reporting it once per
//! instruction and rule.

use super::Explorer;
use crate::state::State;
use crate::{Diagnostic, Rule};

impl<'a> Explorer<'a> {
    fn func_of(&self, i: usize) -> usize {
        self.prog
            .funcs
            .iter()
            .rposition(|f| f.start <= i)
            .unwrap_or(0)
    }

    /// Builds a diagnostic at instruction `i` naming the registers involved.
    pub(super) fn diag(
        &self,
        rule: Rule,
        i: usize,
        st: &State,
        regs: &[u8],
        message: String,
    ) -> Box<Diagnostic> {
        let ins = self.prog.insns[i];
        let line = self
            .prog
            .lines
            .iter()
            .rev()
            .find(|(j, _)| *j <= i && self.func_of(*j) == self.func_of(i))
            .map(|(_, l)| l.clone());
        let mut seen = Vec::new();
        let regs = regs
            .iter()
            .filter(|r| {
                let fresh = !seen.contains(*r);
                seen.push(**r);
                fresh
            })
            .map(|&r| {
                let mut value = st.cur().regs[r as usize].to_string();
                // Name maps: `map#3)` reads better as the map's own name.
                for (k, m) in self.obj.maps.iter().enumerate().rev() {
                    value = value.replace(&format!("map#{k})"), &format!("{})", m.name));
                }
                crate::RegState { reg: r, value }
            })
            .collect();
        let path = self
            .history
            .iter()
            .rev()
            .take(12)
            .rev()
            .map(|&(pc, taken)| crate::Decision { pc, taken })
            .collect();
        Box::new(Diagnostic {
            rule,
            pc: self.cfg.pc(i),
            insn: ins.to_string(),
            func: self
                .prog
                .funcs
                .get(self.func_of(i))
                .map_or_else(|| self.prog.name.clone(), |f| f.name.clone()),
            line,
            message,
            regs,
            path,
        })
    }

    // Diagnostics travel boxed through `R<T>` (they are large); unboxing here would copy.
    #[allow(clippy::boxed_local)]
    pub(super) fn report(&mut self, e: Box<Diagnostic>) {
        // One report per instruction and rule: another path reaching the same error adds
        // nothing the user can act on.
        if !self.errors.iter().any(|x| x.pc == e.pc && x.rule == e.rule) {
            self.errors.push(*e);
        }
    }
}
